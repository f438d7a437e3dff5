import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BrowserService } from "../../src/browser/browser-service.js";
import { SafeHttpClient } from "../../src/security/safe-http.js";
import { browserTool } from "../../src/tools/browser.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { hasPrograms } from "../helpers/requires.js";
import { createRegistryHarness, type RegistryHarness } from "./registry-harness.js";

/** Starts a server on `host`; returns it with its base URL. */
async function serve(
  host: string,
  handler: http.RequestListener,
): Promise<{ server: http.Server; base: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, base: `http://${host}:${(server.address() as AddressInfo).port}` };
}

describe.runIf(hasPrograms("chromium"))("browser tool (headless Chromium against pages on 127.0.0.1)", () => {
  // The canary plays a private host that is not on the allow list: 127.0.0.2 (Linux routes 127/8 to lo).
  const canaryHits: string[] = [];
  let canary: { server: http.Server; base: string };
  let site: { server: http.Server; base: string };
  let harness: RegistryHarness;
  let service: BrowserService;

  beforeAll(async () => {
    canary = await serve("127.0.0.2", (request, response) => {
      canaryHits.push(request.url ?? "");
      response.end("canary");
    });
    site = await serve("127.0.0.1", (request, response): void => {
      const url = new URL(request.url ?? "/", "http://site");
      if (url.pathname === "/redirect-private") {
        response.writeHead(302, { location: `${canary.base}/redirect-target` });
        return void response.end();
      }
      if (url.pathname === "/image-redirect") {
        response.writeHead(302, { location: `${canary.base}/image-redirect-target` });
        return void response.end();
      }
      if (url.pathname === "/leaky") {
        response.writeHead(200, { "content-type": "text/html" });
        return void response.end(`<!doctype html><title>Leaky</title><h1>Leaky page</h1>
<img src="${canary.base}/img">
<img src="/image-redirect">
<iframe src="${canary.base}/frame"></iframe>
<script>fetch("${canary.base}/fetch").catch(() => {});</script>`);
      }
      if (url.pathname === "/long") {
        response.writeHead(200, { "content-type": "text/html" });
        return void response.end(
          `<!doctype html><title>Long</title><div style="height:5000px">tall</div><p id="end">End</p>`,
        );
      }
      if (url.pathname === "/submit") {
        response.writeHead(200, { "content-type": "text/html" });
        return void response.end(
          `<!doctype html><title>Sent</title><h1>Hello ${url.searchParams.get("name") ?? ""}</h1>`,
        );
      }
      response.writeHead(200, { "content-type": "text/html" });
      response.end(`<!doctype html><html><head><title>Form page</title></head><body>
<h1>Welcome</h1><p id="status">not clicked</p>
<button id="flip" onclick="document.getElementById('status').textContent = 'clicked!'">Flip</button>
<form action="/submit"><input id="name" name="name"><button id="send" type="submit">Send</button></form>
</body></html>`);
    });
    const raw = {
      browser: { enabled: true },
      security: { ssrf: { allowHosts: ["127.0.0.1"] }, approvals: { require: [] } },
    };
    harness = await createRegistryHarness([browserTool as Tool], raw);
    service = new BrowserService({
      config: harness.config.browser,
      guard: new SafeHttpClient({ allowHosts: ["127.0.0.1"] }),
      idleMs: 60_000,
    });
    harness = await createRegistryHarness([browserTool as Tool], raw, { services: { browser: service } });
  });

  afterAll(async () => {
    await service?.close();
    await harness?.cleanup();
    site?.server.close();
    canary?.server.close();
  });

  it("does not start Chromium until the first call", () => {
    expect(service.running).toBe(false);
  });

  it("opens, reads, clicks, types and reads the change", async () => {
    const opened = JSON.parse(await harness.call("browser", { action: "open", url: `${site.base}/` }));
    expect(opened).toMatchObject({ ok: true, status: 200, title: "Form page" });
    expect(service.running).toBe(true);
    expect(await harness.call("browser", { action: "read" })).toContain("not clicked");
    await harness.call("browser", { action: "click", selector: "#flip" });
    expect(await harness.call("browser", { action: "read" })).toContain("clicked!");
    await harness.call("browser", { action: "type", selector: "#name", text: "Magpie" });
    const sent = JSON.parse(await harness.call("browser", { action: "click", selector: "#send" }));
    expect(sent.url).toContain("/submit?name=Magpie");
    expect(await harness.call("browser", { action: "read" })).toContain("Hello Magpie");
  });

  it("scrolls and saves a real PNG screenshot in the workspace", async () => {
    await harness.call("browser", { action: "open", url: `${site.base}/long` });
    const scrolled = JSON.parse(await harness.call("browser", { action: "scroll" }));
    expect(scrolled.scrollY).toBeGreaterThan(0);
    const toEnd = JSON.parse(await harness.call("browser", { action: "scroll", selector: "#end" }));
    expect(toEnd.scrollY).toBeGreaterThan(scrolled.scrollY);
    const shot = JSON.parse(await harness.call("browser", { action: "screenshot" }));
    expect(shot.path).toMatch(/^screenshots\/browser-.*\.png$/);
    const png = await fs.readFile(path.join(harness.workspace, shot.path));
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.length).toBeGreaterThan(1000);
    expect(shot.bytes).toBe(png.length);
  });

  it("refuses and reports a page's sub-requests to a private address; the canary receives nothing", async () => {
    const opened = JSON.parse(await harness.call("browser", { action: "open", url: `${site.base}/leaky` }));
    expect(opened.ok).toBe(true);
    // Give the page's fetch and the image redirect time to be attempted.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const text = await harness.call("browser", { action: "read" });
    expect(text).toContain("Leaky page");
    const refusedUrls = (opened.refused as Array<{ url: string; code: string }>).map((entry) => entry.url);
    expect(refusedUrls).toEqual(expect.arrayContaining([`${canary.base}/img`, `${canary.base}/frame`]));
    // Only the canary's entries: Chromium may add a background request of its own that fails DNS here.
    const canaryEntries = (opened.refused as Array<{ url: string; code: string }>).filter((entry) =>
      entry.url.startsWith(canary.base),
    );
    const codes = new Set(canaryEntries.map((entry) => entry.code));
    expect([...codes]).toEqual(["ssrf.private_address"]);
    expect(canaryHits).toEqual([]);
  });

  it("refuses a redirect to a private address (the hop goes through the guarded proxy)", async () => {
    const result = await harness.call("browser", { action: "open", url: `${site.base}/redirect-private` });
    expect(JSON.parse(result).error.code).toBe("ssrf.private_address");
    expect(result).toContain(`${canary.base}/redirect-target`);
    expect(canaryHits).toEqual([]);
  });

  it("refuses navigation to a metadata address and to other schemes", async () => {
    const metadata = JSON.parse(
      await harness.call("browser", { action: "open", url: "http://169.254.169.254/latest/meta-data/" }),
    );
    expect(metadata.error.code).toBe("ssrf.private_address");
    const file = JSON.parse(await harness.call("browser", { action: "open", url: "file:///etc/passwd" }));
    expect(file.error.code).toBe("ssrf.scheme_not_allowed");
  });

  it("asks for click and type as risk:high", async () => {
    const asking = await createRegistryHarness(
      [browserTool as Tool],
      {
        browser: { enabled: true },
        security: { ssrf: { allowHosts: ["127.0.0.1"] }, approvals: { require: ["risk:high"] } },
      },
      { services: { browser: service } },
    );
    try {
      await asking.call("browser", { action: "open", url: `${site.base}/` });
      await asking.call("browser", { action: "read" });
      expect(asking.approvalRequests).toEqual([]);
      await asking.call("browser", { action: "click", selector: "#flip" });
      expect(asking.approvalRequests.map((request) => request.reason)).toEqual(["risk:high"]);
    } finally {
      await asking.cleanup();
    }
  });
});

describe.runIf(hasPrograms("chromium"))("browser idle close", () => {
  it("closes a session's page after the idle time, and the browser process with its last page", async () => {
    const site = await serve("127.0.0.1", (_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end("<title>Idle</title><p>idle</p>");
    });
    const service = new BrowserService({
      config: { enabled: true, idleSecs: 300, allowedDomains: [] },
      guard: new SafeHttpClient({ allowHosts: ["127.0.0.1"] }),
      idleMs: 300,
    });
    const harness = await createRegistryHarness(
      [browserTool as Tool],
      {
        browser: { enabled: true },
        security: { ssrf: { allowHosts: ["127.0.0.1"] }, approvals: { require: [] } },
      },
      { services: { browser: service } },
    );
    try {
      await harness.call("browser", { action: "open", url: `${site.base}/` }, "a");
      expect(service.openSessions).toEqual(["a"]);
      expect(service.running).toBe(true);
      await expect.poll(() => service.openSessions, { timeout: 5_000 }).toEqual([]);
      await expect.poll(() => service.running, { timeout: 5_000 }).toBe(false);
    } finally {
      await service.close();
      await harness.cleanup();
      site.server.close();
    }
  });
});
