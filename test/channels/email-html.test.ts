import { monitorEventLoopDelay } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { htmlToMailText, MAIL_HTML_LIMIT } from "../../channels/email-html.js";
import { hostileInputs, LINEAR_BOUND_MS, MB } from "../helpers/hostile-inputs.js";

/** Milliseconds `run` takes and the longest event-loop stall meanwhile. */
async function measured(run: () => Promise<unknown>): Promise<{ ms: number; stallMs: number }> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const started = performance.now();
  await run();
  const ms = performance.now() - started;
  loop.disable();
  return { ms, stallMs: loop.max / 1e6 };
}

describe("a mail's HTML as text", () => {
  it("keeps the words, paragraphs, list items, table cells and link addresses; drops script, style and head", async () => {
    const html = [
      "<html><head><title>Newsletter</title><style>p { color: red }</style></head><body>",
      "<p>Hello <b>Bob</b>,</p><p>see <a href='https://x.test/r?a=1&amp;b=2'>the report</a> &lt;now&gt;.</p>",
      "<ul><li>one</li><li>two</li></ul>",
      "<table><tr><td>disk</td><td>42%</td></tr><tr><td>load</td><td>0.3</td></tr></table>",
      "<script>alert('x')</script><div>1 < 2 &amp;&#x20AC;&#8364;&nbsp;end</div>",
      "<pre>line 1\nline 2</pre>",
      "<a href='javascript:evil()'>click</a>",
      "</body></html>",
    ].join("\n");
    expect(await htmlToMailText(html)).toBe(
      [
        "Hello Bob,",
        "",
        "see the report <https://x.test/r?a=1&b=2> <now>.",
        "",
        "- one",
        "- two",
        "",
        "disk 42%",
        "load 0.3",
        "",
        "1 < 2 &€€ end",
        "",
        "line 1",
        "line 2",
        "",
        "click",
      ].join("\n"),
    );
  });

  it("reads a 5.7 MB table of 300,000 rows in linear time without holding the event loop", async () => {
    const rows: string[] = [];
    for (let row = 0; row < 300_000; row++) rows.push(`<tr><td>${row % 1000}</td></tr>`);
    const html = `<table>${rows.join("\n")}</table>`;
    let text = "";
    const { ms, stallMs } = await measured(async () => {
      text = await htmlToMailText(html);
    });
    console.log(
      `e-mail HTML: ${html.length} characters in ${Math.round(ms)} ms, longest stall ${Math.round(stallMs)} ms`,
    );
    expect(text.startsWith("0\n1\n2\n")).toBe(true);
    expect(stallMs).toBeLessThan(500);
  });

  it("reads at most MAIL_HTML_LIMIT characters and says so", async () => {
    const html = `<p>${"word ".repeat(MAIL_HTML_LIMIT / 4)}</p>`;
    const text = await htmlToMailText(html);
    expect(text.length).toBeLessThan(MAIL_HTML_LIMIT + 200);
    expect(text).toContain(`only the first ${MAIL_HTML_LIMIT} were read`);
  });

  it("stays linear on deep nesting that makes HTML parsers quadratic", async () => {
    const cases = {
      "200,000 unclosed <div>": `${"<div>".repeat(200_000)}x`,
      "100,000 <b> then 100,000 </i>": `${"<b>".repeat(100_000)}${"</i>".repeat(100_000)}`,
      "50,000 nested tables": "<table><tr><td>".repeat(50_000),
    };
    for (const [name, html] of Object.entries(cases)) {
      const { ms } = await measured(() => htmlToMailText(html));
      expect(ms, name).toBeLessThan(LINEAR_BOUND_MS);
    }
  });

  it.each(Object.entries(hostileInputs(MB)))("stays linear on %s", async (_name, input) => {
    const { ms, stallMs } = await measured(() => htmlToMailText(input));
    expect(ms).toBeLessThan(LINEAR_BOUND_MS);
    expect(stallMs).toBeLessThan(LINEAR_BOUND_MS / 4);
  });
});
