import dgram from "node:dgram";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { BrowserService } from "../../src/browser/browser-service.js";
import { SafeHttpClient } from "../../src/security/safe-http.js";
import { browserTool } from "../../src/tools/browser.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { hasPrograms } from "../helpers/requires.js";
import { createRegistryHarness, type RegistryHarness } from "./registry-harness.js";

interface Canary {
  base: string;
  wsBase: string;
  /** `host:port`, for STUN and TURN URLs. */
  hostPort: string;
  /** Every TCP connection, request, upgrade and UDP datagram that reached it. */
  hits: string[];
  close(): void;
}

/**
 * A canary on `host`: an HTTP server that counts TCP connections (not requests: a refused or aborted request
 * still connects) and WebSocket upgrades, and a UDP socket on the same port that counts datagrams (STUN, TURN,
 * QUIC travel over UDP, which no HTTP proxy carries).
 */
async function canaryOn(host: string): Promise<Canary> {
  const hits: string[] = [];
  const server = http.createServer((request, response) => {
    hits.push(`request ${request.url}`);
    response.writeHead(200, { "content-type": "text/html" });
    response.end("<title>canary</title>canary");
  });
  server.on("connection", (socket) => hits.push(`tcp connection from ${socket.remoteAddress}`));
  server.on("upgrade", (request, socket) => {
    hits.push(`upgrade ${request.url}`);
    socket.end("HTTP/1.1 400 Bad Request\r\n\r\n");
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  const udp = dgram.createSocket("udp4");
  udp.on("message", (message, from) => hits.push(`udp ${message.length} bytes from ${from.address}`));
  await new Promise<void>((resolve) => udp.bind(port, host, resolve));
  return {
    base: `http://${host}:${port}`,
    wsBase: `ws://${host}:${port}`,
    hostPort: `${host}:${port}`,
    hits,
    close: () => {
      server.closeAllConnections();
      server.close();
      udp.close();
    },
  };
}

describe.runIf(hasPrograms("chromium"))("browser: every request Chromium makes passes the SSRF guard", () => {
  // The test site is on 127.0.0.4, the one private host on the allow list. The canaries are not: 127.0.0.1,
  // where Magpie's own HTTP server and a local LLM listen, and 127.0.0.2.
  let canary: Canary;
  let canary2: Canary;
  let site: http.Server;
  let siteBase: string;
  let harness: RegistryHarness;
  let service: BrowserService;

  beforeAll(async () => {
    canary = await canaryOn("127.0.0.1");
    canary2 = await canaryOn("127.0.0.2");
    site = http.createServer((request, response): void => {
      const url = new URL(request.url ?? "/", "http://site");
      const c = canary.base;
      if (url.pathname === "/redirect") {
        response.writeHead(302, { location: `${c}/redirected` });
        return void response.end();
      }
      if (url.pathname === "/sw.js") {
        response.writeHead(200, { "content-type": "text/javascript" });
        return void response.end(
          `self.addEventListener("install", () => fetch("${c}/sw-install").catch(() => {}));
fetch("${c}/sw-top").catch(() => {});`,
        );
      }
      if (url.pathname === "/worker.js") {
        response.writeHead(200, { "content-type": "text/javascript" });
        return void response.end(
          `fetch("${c}/worker").catch(() => {}); new WebSocket("${canary.wsBase}/worker-ws");`,
        );
      }
      if (url.pathname === "/socket") {
        response.writeHead(200, { "content-type": "text/html" });
        return void response.end(`<!doctype html><title>connecting</title><script>
const socket = new WebSocket("ws://" + location.host + "/ws");
socket.onopen = () => socket.send("hi");
socket.onmessage = (event) => { document.title = event.data; };
</script>`);
      }
      if (url.pathname === "/nav") {
        response.writeHead(200, { "content-type": "text/html" });
        return void response.end(
          `<!doctype html><title>Nav</title><a id="go" href="${c}/clicked">go</a><a id="go2" href="${canary2.base}/clicked">go2</a>`,
        );
      }
      if (url.pathname === "/webrtc") {
        const turn = { username: "u", credential: "p" };
        response.writeHead(200, { "content-type": "text/html" });
        return void response.end(`<!doctype html><title>WebRTC</title><a id="ping" href="/nav" ping="${c}/ping">ping</a>
<script>
const peer = new RTCPeerConnection({ iceServers: [
  { urls: "stun:${canary.hostPort}" },
  { urls: "turn:${canary.hostPort}?transport=udp", ...${JSON.stringify(turn)} },
  { urls: "turn:${canary2.hostPort}?transport=tcp", ...${JSON.stringify(turn)} },
] });
peer.createDataChannel("x");
peer.createOffer().then((offer) => peer.setLocalDescription(offer));
peer.onicegatheringstatechange = () => { if (peer.iceGatheringState === "complete") document.title = "gathered"; };
try { new WebTransport("https://${canary.hostPort}/wt").ready.catch(() => {}); } catch {}
</script>`);
      }
      if (url.pathname === "/") {
        response.writeHead(200, { "content-type": "text/html" });
        return void response.end(`<!doctype html><html><head><title>Everything</title>
<link rel="icon" href="${c}/favicon.ico">
<link rel="apple-touch-icon" href="${canary2.base}/touch.png">
<link rel="preconnect" href="${canary2.base}">
<link rel="dns-prefetch" href="${canary2.base}">
<link rel="prefetch" href="${c}/prefetch">
<link rel="preload" as="image" href="${c}/preload.png">
<link rel="manifest" href="${c}/manifest.json">
<link rel="stylesheet" href="${c}/style.css">
<script type="speculationrules">{"prefetch":[{"source":"list","urls":["${c}/speculation"]}],"prerender":[{"source":"list","urls":["${c}/prerender"]}]}</script>
</head><body><h1>Everything page</h1>
<img src="${c}/img.png">
<img src="/redirect">
<iframe src="${c}/frame"></iframe>
<video src="${c}/video.mp4" autoplay muted></video>
<script>
fetch("${c}/fetch").catch(() => {});
try { const socket = new WebSocket("${canary.wsBase}/ws"); socket.onerror = () => {}; } catch {}
try { new EventSource("${c}/events"); } catch {}
try { navigator.sendBeacon("${c}/beacon", "x"); } catch {}
try { new Worker("/worker.js"); } catch {}
if (navigator.serviceWorker) navigator.serviceWorker.register("/sw.js").catch(() => {});
</script></body></html>`);
      }
      response.writeHead(404);
      response.end();
    });
    // The allowed site's own WebSocket echoes: what the guard lets through must still work.
    const sockets = new WebSocketServer({ server: site });
    sockets.on("connection", (socket) => socket.on("message", (data) => socket.send(`echo ${data}`)));
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.4", resolve));
    siteBase = `http://127.0.0.4:${(site.address() as AddressInfo).port}`;
    const raw = {
      browser: { enabled: true },
      security: { ssrf: { allowHosts: ["127.0.0.4"] }, approvals: { require: [] } },
    };
    service = new BrowserService({
      config: { enabled: true, idleSecs: 300, allowedDomains: [] },
      guard: new SafeHttpClient({ allowHosts: ["127.0.0.4"] }),
      idleMs: 60_000,
    });
    harness = await createRegistryHarness([browserTool as Tool], raw, { services: { browser: service } });
  });

  beforeEach(() => {
    canary.hits.length = 0;
    canary2.hits.length = 0;
  });

  afterAll(async () => {
    await service?.close();
    await harness?.cleanup();
    site?.closeAllConnections();
    site?.close();
    canary?.close();
    canary2?.close();
  });

  it("a page full of references to a private host: favicon, prefetch, preconnect, workers, WebSocket, fetch, img, iframe, redirect", async () => {
    const opened = JSON.parse(await harness.call("browser", { action: "open", url: `${siteBase}/` }));
    expect(opened).toMatchObject({ ok: true, title: "Everything" });
    // The page's own requests were attempted and refused.
    expect(opened.refused.map((entry: { url: string }) => entry.url)).toEqual(
      expect.arrayContaining([`${canary.base}/fetch`, `${canary.base}/img.png`]),
    );
    // A screenshot forces a paint, which is when Chromium asks for icons.
    await harness.call("browser", { action: "screenshot" });
    const redirect = JSON.parse(
      await harness.call("browser", { action: "open", url: `${siteBase}/redirect` }),
    );
    expect(redirect.error.code).toBe("ssrf.private_address");
    expect(canary.hits).toEqual([]);
    expect(canary2.hits).toEqual([]);
  });

  it("a WebSocket to the allowed host still works through the proxy", async () => {
    await harness.call("browser", { action: "open", url: `${siteBase}/socket` });
    await expect
      .poll(async () => JSON.parse(await harness.call("browser", { action: "scroll" })).title, {
        timeout: 10_000,
        interval: 200,
      })
      .toBe("echo hi");
  });

  it("refused navigations (opened directly, or clicked from a page) leave no request behind, favicons included", async () => {
    for (let round = 0; round < 3; round++) {
      const direct = JSON.parse(
        await harness.call("browser", { action: "open", url: `${canary.base}/direct` }),
      );
      expect(direct.error.code).toBe("ssrf.private_address");
      await harness.call("browser", { action: "open", url: `${siteBase}/nav` });
      await harness.call("browser", { action: "click", selector: "#go" });
      await harness.call("browser", { action: "open", url: `${siteBase}/nav` });
      await harness.call("browser", { action: "click", selector: "#go2" });
      await harness.call("browser", { action: "screenshot" });
    }
    // Anything Chromium does after the page settles (icon fetches, retries) gets a moment to show.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(canary.hits).toEqual([]);
    expect(canary2.hits).toEqual([]);
  });

  it("WebRTC's STUN and TURN (UDP and TCP), WebTransport and hyperlink pings don't reach a private host", async () => {
    await harness.call("browser", { action: "open", url: `${siteBase}/webrtc` });
    // ICE gathering gives up on unreachable servers within seconds; wait for it (or for the bound) either way.
    await expect
      .poll(async () => JSON.parse(await harness.call("browser", { action: "scroll" })).title, {
        timeout: 15_000,
        interval: 500,
      })
      .toBe("gathered")
      .catch(() => undefined);
    await harness.call("browser", { action: "click", selector: "#ping" });
    // ICE keeps retrying while the page lives: give it a moment, then leave the page.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await harness.call("browser", { action: "open", url: `${siteBase}/nav` });
    expect(canary.hits).toEqual([]);
    expect(canary2.hits).toEqual([]);
  });

  it("requests outside every session's context (Chromium's own) go through a guarded proxy too", async () => {
    await harness.call("browser", { action: "open", url: `${siteBase}/nav` });
    // A context made without the session's proxy stands for whatever Chromium fetches outside the sessions.
    const browser = await (service as unknown as { browser: Promise<Browser> }).browser;
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${canary.base}/outside-session`, { timeout: 10_000 }).catch(() => undefined);
      await page.goto(`${canary2.base}/outside-session`, { timeout: 10_000 }).catch(() => undefined);
    } finally {
      await context.close();
    }
    expect(canary.hits).toEqual([]);
    expect(canary2.hits).toEqual([]);
  });
});
