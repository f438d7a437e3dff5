import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { withoutInlineData } from "../../src/tools/web/html-to-text.js";

/**
 * Big inline `data:` URIs are dropped from a page before it is parsed (src/tools/web/html-to-text.ts). The pattern
 * must drop exactly what the one it replaced dropped: that one's open-ended counted repetition (`{1024,}`) blocked
 * the event loop 0.4–0.65 s on a page with a 3 MB inline image.
 */
const ONE_PATTERN = /data:[\w.+/-]*;base64,[\w+/=\s-]{1024,}/gi;
const reference = (html: string) => (html.includes("data:") ? html.replace(ONE_PATTERN, "data:,") : html);

const payload = (bytes: number) => randomBytes(bytes).toString("base64");

describe("inline data dropped before parsing", () => {
  it("drops what the one pattern dropped, and keeps what it kept", () => {
    const big = payload(3_000);
    const cases = [
      "<p>no inline data</p>",
      `<img src="data:image/png;base64,${big}"><p>after</p>`,
      `<img src="data:image/png;base64,${payload(500)}"><p>a small one stays</p>`,
      `<img src="DATA:image/PNG;BASE64,${big}">upper case, and data: in a later text`,
      `<div style="background:url(data:image/svg+xml;base64,${big})">css</div>`,
      `<img src="data:image/png;base64,${big.slice(0, 600)}\n ${big.slice(600, 2_000)}\r\n${big.slice(2_000)}">with breaks`,
      `data:text/plain;base64,${big} then words and more words. A sentence.`,
      `<img src="data:;base64,${big}"><img src="data:image/gif;base64,${big}"><img src="data:x;base64,${payload(100)}">`,
      `data:image/png;base64,${payload(100)}, data:image/png;base64,${big}`,
      `data:image/png;base64,${"a".repeat(1_023)}!`,
      `data:image/png;base64,${"a".repeat(1_024)}`,
      `data:${"x".repeat(5_000)};base64,${big}`,
      "data:image/png;base64,",
    ];
    for (const html of cases) expect(withoutInlineData(html), html.slice(0, 60)).toBe(reference(html));
  });

  it("a page with a 3 MB image keeps its text and loses the image, without stalling the event loop", () => {
    const html = `<h1>Snapshot</h1><img alt="porch" src="data:image/png;base64,${payload((3 * 1024 * 1024 * 3) / 4)}"><p>After the image.</p>`;
    const started = performance.now();
    expect(withoutInlineData(html)).toBe(
      '<h1>Snapshot</h1><img alt="porch" src="data:,"><p>After the image.</p>',
    );
    // ~16 ms here; the `{1024,}` pattern took 0.4–1 s on an idle box (the bound leaves room for a loaded runner).
    expect(performance.now() - started).toBeLessThan(250);
  });
});
