import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SafeHttpClient } from "../../src/security/safe-http.js";
import { htmlToReadable } from "../../src/tools/web/html-to-text.js";
import { parseDuckDuckGoHtml, WebSearchClient } from "../../src/tools/web/web-search-client.js";
import { createToolHarness, errorCode } from "./tool-harness.js";

const fixture = (name: string) => fs.readFile(new URL(`../fixtures/web/${name}`, import.meta.url), "utf8");

describe("web_fetch extraction (saved HTML)", () => {
  it("keeps title, headings, links, lists and code; drops scripts, styles, forms and boilerplate", async () => {
    const { title, text } = htmlToReadable(
      await fixture("article.html"),
      "https://blog.example.com/posts/fan.html",
    );
    expect(title).toBe("Raspberry Pi fan control | Example Blog");
    expect(text).toContain("# Controlling a fan from a Raspberry Pi");
    expect(text).toContain("## Parts");
    expect(text).toContain("### The script");
    expect(text).toContain("[GPIO guide](https://blog.example.com/docs/gpio.html)");
    expect(text).toContain("[official documentation](https://www.raspberrypi.com/documentation/)");
    expect(text).toContain("**5 V fan**");
    expect(text).toMatch(/^- Raspberry Pi 4$/m);
    expect(text).toContain("- NPN transistor (`2N2222`)");
    expect(text).toMatch(/^ {2}- 5 V, 0\.2 A$/m);
    expect(text).toMatch(/^1\. Wire the transistor\.$/m);
    expect(text).toMatch(/^2\. Install the script\.$/m);
    expect(text).toContain("```\nimport gpiozero\nfan = gpiozero.OutputDevice(14)\nfan.on()\n```");
    expect(text).toContain("> Measure the temperature first.");
    expect(text).toContain("Temp | Fan |");
    expect(text).toContain("[image: the fan wired up]");
    for (const dropped of [
      "UA-TRACKING-SCRIPT",
      "injected",
      "secret-style",
      "NAVIGATION-BOILERPLATE",
      "FOOTER-BOILERPLATE",
      "NOSCRIPT-FALLBACK",
      "SEARCH-BUTTON",
    ]) {
      expect(text).not.toContain(dropped);
    }
  });

  it("parses DuckDuckGo HTML results, skipping ads and unwrapping redirect links", async () => {
    expect(parseDuckDuckGoHtml(await fixture("duckduckgo-results.html"))).toEqual([
      {
        title: "Magpie — a chat-ops assistant",
        url: "https://example.org/magpie?a=1&b=2",
        snippet: "Self-hosted chat-ops assistant for a small always-on box.",
      },
      { title: "Direct link result", url: "https://direct.example.net/page", snippet: "Second snippet." },
    ]);
  });
});

describe("web_fetch and web_search through local fakes", () => {
  let server: http.Server;
  let port = 0;
  const seen: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];

  beforeAll(async () => {
    const article = await fixture("article.html");
    const ddg = await fixture("duckduckgo-results.html");
    server = http.createServer((request, response) => {
      seen.push({ url: request.url ?? "", headers: request.headers });
      const url = new URL(request.url ?? "/", "http://fake");
      if (url.pathname === "/res/v1/web/search") {
        if (request.headers["x-subscription-token"] !== "brave-test-key") {
          response.writeHead(401);
          return response.end();
        }
        response.writeHead(200, { "content-type": "application/json" });
        return response.end(
          JSON.stringify({
            web: {
              results: [
                {
                  title: "First <strong>hit</strong>",
                  url: "https://one.example/",
                  description: "About <strong>magpies</strong>.",
                },
                { title: "Second", url: "https://two.example/", description: "More." },
                { title: "Third", url: "https://three.example/", description: "Even more." },
              ],
            },
          }),
        );
      }
      if (url.pathname === "/html/") {
        response.writeHead(200, { "content-type": "text/html" });
        return response.end(ddg);
      }
      if (url.pathname === "/page") {
        response.writeHead(200, { "content-type": "text/html" });
        return response.end(article);
      }
      if (url.pathname === "/plain") {
        response.writeHead(200, { "content-type": "text/plain" });
        return response.end("x".repeat(500));
      }
      response.writeHead(404);
      return response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const http127 = () =>
    new SafeHttpClient({
      testOnlyPublicHosts: { "brave.test": "127.0.0.1", "ddg.test": "127.0.0.1", "site.test": "127.0.0.1" },
    });

  it("web_fetch returns the readable page and honours max_chars", async () => {
    const harness = await createToolHarness({ services: { safeHttp: http127() } });
    try {
      const text = await harness.call("web_fetch", { url: `http://site.test:${port}/page` });
      expect(text).toMatch(/^# Raspberry Pi fan control \| Example Blog\nURL: http:\/\/site\.test:\d+\/page/);
      expect(text).toContain(`[GPIO guide](http://site.test:${port}/docs/gpio.html)`);
      const short = await harness.call("web_fetch", {
        url: `http://site.test:${port}/plain`,
        max_chars: 100,
      });
      expect(short).toContain("x".repeat(100));
      expect(short).not.toContain("x".repeat(101));
      expect(short).toContain("[truncated: showing 100 of 500 characters");
      expect(errorCode(await harness.call("web_fetch", { url: `http://site.test:${port}/missing` }))).toBe(
        "web.http_error",
      );
    } finally {
      await harness.cleanup();
    }
  });

  it("web_search uses Brave when a key is set and DuckDuckGo otherwise", async () => {
    const webSearch = new WebSearchClient({
      http: http127(),
      braveBaseUrl: `http://brave.test:${port}`,
      duckDuckGoBaseUrl: `http://ddg.test:${port}`,
    });
    const brave = await createToolHarness({
      tools: { web: { braveApiKey: "brave-test-key" } },
      services: { webSearch },
    });
    const ddg = await createToolHarness({ services: { webSearch } });
    try {
      const braveResult = JSON.parse(await brave.call("web_search", { query: "magpie birds", count: 2 }));
      expect(braveResult).toEqual({
        query: "magpie birds",
        provider: "brave",
        count: 2,
        results: [
          { title: "First hit", url: "https://one.example/", snippet: "About magpies." },
          { title: "Second", url: "https://two.example/", snippet: "More." },
        ],
      });
      const braveCall = seen.find((entry) => entry.url.startsWith("/res/v1/web/search"))!;
      expect(new URL(braveCall.url, "http://x").searchParams.get("q")).toBe("magpie birds");

      const ddgResult = JSON.parse(await ddg.call("web_search", { query: "magpie chat-ops" }));
      expect(ddgResult.provider).toBe("duckduckgo");
      expect(ddgResult.results[0]).toEqual({
        title: "Magpie — a chat-ops assistant",
        url: "https://example.org/magpie?a=1&b=2",
        snippet: "Self-hosted chat-ops assistant for a small always-on box.",
      });
      expect(seen.some((entry) => entry.url.startsWith("/html/?q=magpie+chat-ops"))).toBe(true);

      const badKey = await createToolHarness({
        tools: { web: { braveApiKey: "wrong-key" } },
        services: { webSearch },
      });
      expect(errorCode(await badKey.call("web_search", { query: "x" }))).toBe("search.unauthorized");
      await badKey.cleanup();
    } finally {
      await brave.cleanup();
      await ddg.cleanup();
    }
  });
});
