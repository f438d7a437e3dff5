import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MagpieApp } from "../../src/app/app.js";
import { createLogger } from "../../src/log/logger.js";
import { type LookupPort, SafeHttpClient } from "../../src/security/safe-http.js";
import { testConfig } from "../helpers/harness.js";
import { createToolHarness, errorCode, type ToolHarness } from "../tools/tool-harness.js";

/** Listens on 127.0.0.1 (and ::1 when available) and counts every connection: it must stay at zero. */
const canary = { connections: 0, requests: 0, port: 0 };
const canaryServers: http.Server[] = [];
/** Plays a public website at "public.test" (mapped to 127.0.0.1 only through the test-only constructor option). */
let publicServer: http.Server;
let publicPort = 0;
const publicRequests: Array<{
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}> = [];

function listen(server: http.Server, host: string, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

beforeAll(async () => {
  const makeCanary = () =>
    http
      .createServer((_request, response) => {
        canary.requests++;
        response.end("CANARY-REACHED");
      })
      .on("connection", () => canary.connections++);
  const v4 = makeCanary();
  canary.port = await listen(v4, "127.0.0.1");
  canaryServers.push(v4);
  const v6 = makeCanary();
  await listen(v6, "::1", canary.port).then(
    () => canaryServers.push(v6),
    () => undefined,
  );

  // Control: the canary really answers when contacted directly (so "zero connections" below means something).
  const control = await fetch(`http://127.0.0.1:${canary.port}/control`).then((response) => response.text());
  expect(control).toBe("CANARY-REACHED");
  expect(canary.connections).toBeGreaterThan(0);
  canary.connections = 0;
  canary.requests = 0;

  const article = await fs.readFile(new URL("../fixtures/web/article.html", import.meta.url), "utf8");
  publicServer = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      publicRequests.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      });
      const url = new URL(request.url ?? "/", "http://public.test");
      const redirect = (location: string, status = 302) => {
        response.writeHead(status, { location });
        response.end();
      };
      switch (url.pathname) {
        case "/article":
          response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
          return response.end(article);
        case "/echo":
          response.writeHead(200, { "content-type": "application/json" });
          return response.end(
            JSON.stringify({
              method: request.method,
              body: Buffer.concat(chunks).toString(),
              auth: request.headers.authorization ?? null,
              host: request.headers.host,
            }),
          );
        case "/big":
          response.writeHead(200, { "content-type": "text/plain" });
          return response.end("z".repeat(5000));
        case "/to-private":
          return redirect(`http://127.0.0.1:${canary.port}/stolen`);
        case "/to-ipv6":
          return redirect(`http://[::1]:${canary.port}/stolen`, 307);
        case "/to-mapped":
          return redirect(`http://[::ffff:127.0.0.1]:${canary.port}/stolen`, 301);
        case "/to-decimal":
          return redirect(`http://2130706433:${canary.port}/stolen`);
        case "/to-localhost":
          return redirect(`http://localhost.:${canary.port}/stolen`, 308);
        case "/to-metadata":
          return redirect("http://169.254.169.254/latest/meta-data/iam/");
        case "/to-file":
          return redirect("file:///etc/passwd");
        case "/to-other-origin":
          return redirect(`http://other.test:${publicPort}/echo`, 307);
        case "/hop": {
          const left = Number(url.searchParams.get("left") ?? "0");
          return left > 0 ? redirect(`/hop?left=${left - 1}`) : redirect("/article");
        }
        default:
          response.writeHead(404);
          return response.end("not found");
      }
    });
  });
  publicPort = await listen(publicServer, "127.0.0.1");
});

afterAll(async () => {
  // The whole point: nothing ever reached the canary.
  expect(canary.connections).toBe(0);
  expect(canary.requests).toBe(0);
  await Promise.all(
    [...canaryServers, publicServer].map((server) => new Promise((resolve) => server.close(resolve))),
  );
});

const harnesses: ToolHarness[] = [];
async function harness(options: Parameters<typeof createToolHarness>[0] = {}) {
  const created = await createToolHarness({
    tools: { http: { enabled: true }, ...options.tools },
    ...options,
    services: options.services,
  });
  harnesses.push(created);
  return created;
}
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((item) => item.cleanup()));
  expect(canary.connections).toBe(0);
});

/** A fake DNS: names a real resolver would send to private addresses, without touching the network. */
const fakeDns: Record<string, Array<{ address: string; family: number }>> = {
  "rebind.test": [{ address: "127.0.0.1", family: 4 }],
  "mixed.test": [
    { address: "93.184.216.34", family: 4 },
    { address: "10.0.0.5", family: 4 },
  ],
  "v6-loopback.test": [{ address: "::1", family: 6 }],
  "metadata.test": [{ address: "169.254.169.254", family: 4 }],
  "mapped.test": [{ address: "::ffff:127.0.0.1", family: 6 }],
  "nas.test": [{ address: "127.0.0.1", family: 4 }],
  "nas-metadata.test": [{ address: "169.254.169.254", family: 4 }],
};
const lookups: string[] = [];
const fakeLookup: LookupPort = async (hostname) => {
  lookups.push(hostname);
  const answer = fakeDns[hostname];
  if (!answer) throw new Error(`ENOTFOUND ${hostname}`);
  return answer;
};
const guardedClient = () =>
  new SafeHttpClient({
    lookup: fakeLookup,
    testOnlyPublicHosts: { "public.test": "127.0.0.1", "other.test": "127.0.0.1" },
  });

describe("SSRF guard", () => {
  const port = () => canary.port;
  const literalAttacks = () => [
    `http://127.0.0.1:${port()}/`,
    `http://2130706433:${port()}/`,
    `http://017700000001:${port()}/`,
    `http://0177.0.0.1:${port()}/`,
    `http://0x7f.0.0.1:${port()}/`,
    `http://0x7f000001:${port()}/`,
    `http://127.1:${port()}/`,
    `http://127.0.1:${port()}/`,
    `http://[::1]:${port()}/`,
    `http://[0:0:0:0:0:0:0:1]:${port()}/`,
    `http://[::ffff:127.0.0.1]:${port()}/`,
    `http://[::ffff:7f00:1]:${port()}/`,
    `http://[::ffff:169.254.169.254]/`,
    `http://0.0.0.0:${port()}/`,
    `http://0:${port()}/`,
    `http://[::]:${port()}/`,
    `http://localhost:${port()}/`,
    `http://localhost.:${port()}/`,
    `http://LocalHost:${port()}/`,
    `http://api.localhost:${port()}/`,
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://100.100.100.200/latest/meta-data/",
    "http://100.64.0.1/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://[fe80::1]/",
    "http://[ff02::1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[2002:7f00:1::]/",
    `https://127.0.0.1:${port()}/`,
  ];

  it("web_fetch and http_request refuse every loopback/private/link-local/CGNAT/multicast/mapped/metadata form", async () => {
    const tools = await harness();
    for (const url of literalAttacks()) {
      for (const tool of ["web_fetch", "http_request"]) {
        const text = await tools.call(tool, { url });
        expect(errorCode(text), `${tool} ${url}`).toBe("ssrf.private_address");
        expect(text).not.toContain("CANARY-REACHED");
      }
    }
    expect(canary.connections).toBe(0);
    expect(tools.store.audit.recent(1)[0]).toMatchObject({
      tool: "http_request",
      verdict: "deny",
      errorCode: "ssrf.private_address",
    });
  });

  it("judges every DNS answer, with one lookup per hop", async () => {
    const tools = await harness({ services: { safeHttp: guardedClient() } });
    for (const host of ["rebind.test", "mixed.test", "v6-loopback.test", "metadata.test", "mapped.test"]) {
      lookups.length = 0;
      const text = await tools.call("web_fetch", { url: `http://${host}:${canary.port}/` });
      expect(errorCode(text), host).toBe("ssrf.private_address");
      expect(lookups).toEqual([host]);
    }
    expect(errorCode(await tools.call("web_fetch", { url: "http://unknown.test/" }))).toBe("ssrf.dns_failed");
  });

  it("refuses non-http schemes and credentials in URLs", async () => {
    const tools = await harness();
    for (const url of [
      "file:///etc/passwd",
      "ftp://127.0.0.1/",
      `gopher://127.0.0.1:${canary.port}/_GET`,
      "data:text/plain,hi",
      "javascript:alert(1)",
    ]) {
      expect(errorCode(await tools.call("web_fetch", { url })), url).toBe("ssrf.scheme_not_allowed");
    }
    expect(
      errorCode(await tools.call("http_request", { url: `http://user:pw@127.0.0.1:${canary.port}/` })),
    ).toBe("ssrf.credentials_in_url");
    expect(errorCode(await tools.call("web_fetch", { url: "not a url" }))).toBe("ssrf.invalid_url");
  });

  it("re-checks every redirect hop: a public page redirecting to a private address is refused", async () => {
    const tools = await harness({ services: { safeHttp: guardedClient() } });
    for (const route of [
      "/to-private",
      "/to-ipv6",
      "/to-mapped",
      "/to-decimal",
      "/to-localhost",
      "/to-metadata",
    ]) {
      const text = await tools.call("http_request", { url: `http://public.test:${publicPort}${route}` });
      expect(errorCode(text), route).toBe("ssrf.private_address");
    }
    expect(
      errorCode(await tools.call("web_fetch", { url: `http://public.test:${publicPort}/to-file` })),
    ).toBe("ssrf.scheme_not_allowed");
    expect(canary.connections).toBe(0);
  });

  it("follows at most 5 redirects", async () => {
    const tools = await harness({ services: { safeHttp: guardedClient() } });
    const ok = await tools.call("web_fetch", { url: `http://public.test:${publicPort}/hop?left=4` });
    expect(errorCode(ok)).toBeNull();
    expect(ok).toContain("Controlling a fan");
    expect(
      errorCode(await tools.call("web_fetch", { url: `http://public.test:${publicPort}/hop?left=5` })),
    ).toBe("ssrf.too_many_redirects");
  });

  it("the test-only public host mapping is exact: IP literals and other names stay refused", async () => {
    const client = guardedClient();
    await expect(client.resolveTarget(`http://public.test:${publicPort}/`)).resolves.toMatchObject({
      address: "127.0.0.1",
    });
    await expect(client.resolveTarget(`http://127.0.0.1:${publicPort}/`)).rejects.toMatchObject({
      code: "ssrf.private_address",
    });
    await expect(client.resolveTarget(`http://sub.public.test:${publicPort}/`)).rejects.toMatchObject({
      code: "ssrf.dns_failed",
    });
  });

  it("honours allowedDomains (subdomains included, look-alikes refused)", async () => {
    const tools = await harness({
      tools: { http: { enabled: true, allowedDomains: ["example.org"] } },
      services: { safeHttp: guardedClient() },
    });
    const refused = await tools.call("http_request", { url: `http://public.test:${publicPort}/echo` });
    expect(errorCode(refused)).toBe("ssrf.domain_not_allowed");
    expect(errorCode(await tools.call("http_request", { url: "http://example.org.evil.test/" }))).toBe(
      "ssrf.domain_not_allowed",
    );
    expect(errorCode(await tools.call("http_request", { url: "http://notexample.org/" }))).toBe(
      "ssrf.domain_not_allowed",
    );
    const client = new SafeHttpClient({ lookup: fakeLookup });
    await expect(client.resolveTarget("http://api.example.org/", ["example.org"])).rejects.toMatchObject({
      code: "ssrf.dns_failed",
    });
  });
});

describe("http_request", () => {
  it("is offered only when tools.http.enabled", async () => {
    const off = await createToolHarness();
    harnesses.push(off);
    expect(off.registry.enabledNames()).not.toContain("http_request");
    expect(off.registry.enabledNames()).toContain("web_fetch");
  });

  it("sends method, headers and body to the resolved address; a Host header can't be smuggled", async () => {
    const tools = await harness({ services: { safeHttp: guardedClient() } });
    const result = JSON.parse(
      await tools.call("http_request", {
        url: `http://public.test:${publicPort}/echo`,
        method: "POST",
        headers: { authorization: "Bearer abc", host: "internal.admin", "content-type": "text/plain" },
        body: "hello",
      }),
    );
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body)).toEqual({
      method: "POST",
      body: "hello",
      auth: "Bearer abc",
      host: `public.test:${publicPort}`,
    });
  });

  it("cuts the body at tools.http.maxResponseBytes and says so", async () => {
    const tools = await harness({
      tools: { http: { enabled: true, maxResponseBytes: 1000 } },
      services: { safeHttp: guardedClient() },
    });
    const result = JSON.parse(
      await tools.call("http_request", { url: `http://public.test:${publicPort}/big` }),
    );
    expect(result.body).toHaveLength(1000);
    expect(result.truncated).toContain("1000 bytes");
  });
});

describe("security.ssrf.allowHosts", () => {
  /** Plays the owner's home server (a different port from the canary, which must stay untouched). */
  let home: http.Server;
  let homePort = 0;
  const homeRequests: string[] = [];
  beforeAll(async () => {
    home = http.createServer((request, response) => {
      homeRequests.push(request.url ?? "");
      const redirect = (location: string) => {
        response.writeHead(302, { location });
        response.end();
      };
      if (request.url === "/to-metadata") return redirect("http://169.254.169.254/latest/meta-data/");
      if (request.url === "/to-lan") return redirect("http://192.168.1.60/admin");
      if (request.url === "/to-v6-loopback") return redirect(`http://[::1]:${canary.port}/stolen`);
      response.writeHead(200, { "content-type": "text/plain" });
      response.end("HOME-SERVER");
    });
    homePort = await listen(home, "127.0.0.1");
  });
  afterAll(async () => {
    await new Promise((resolve) => home.close(resolve));
  });

  const client = (allowHosts: string[]) => new SafeHttpClient({ lookup: fakeLookup, allowHosts });
  const get = (safeHttp: SafeHttpClient, url: string) =>
    safeHttp.request({ url, maxResponseBytes: 1000, timeoutMs: 5000 }).then(
      (response) => response.body.toString(),
      (error: { code?: string }) => error.code ?? String(error),
    );

  it("reaches an allowed private host; the same request without the entry is refused", async () => {
    expect(await get(client(["127.0.0.1"]), `http://127.0.0.1:${homePort}/`)).toBe("HOME-SERVER");
    expect(await get(client([]), `http://127.0.0.1:${homePort}/`)).toBe("ssrf.private_address");
    expect(await get(client(["127.0.0.0/8"]), `http://127.0.0.1:${homePort}/`)).toBe("HOME-SERVER");
    // The other spellings of an allowed address are that address.
    expect(await get(client(["127.0.0.1"]), `http://2130706433:${homePort}/`)).toBe("HOME-SERVER");
  });

  it("web_fetch and http_request follow config security.ssrf.allowHosts", async () => {
    const tools = await harness();
    tools.config.security.ssrf.allowHosts = ["127.0.0.1"];
    const fetched = await tools.call("web_fetch", { url: `http://127.0.0.1:${homePort}/page` });
    expect(errorCode(fetched)).toBeNull();
    expect(fetched).toContain("HOME-SERVER");
    const requested = JSON.parse(
      await tools.call("http_request", { url: `http://127.0.0.1:${homePort}/api` }),
    );
    expect(requested).toMatchObject({ status: 200, body: "HOME-SERVER" });
    const refused = await tools.call("http_request", { url: `http://[::1]:${canary.port}/` });
    expect(errorCode(refused)).toBe("ssrf.private_address");
  });

  it("allowing a LAN range opens nothing else: loopback in every spelling, metadata, other private ranges", async () => {
    const lan = client(["192.168.1.0/24"]);
    await expect(lan.resolveTarget("http://192.168.1.50/")).resolves.toMatchObject({
      address: "192.168.1.50",
    });
    for (const url of [
      `http://127.0.0.1:${canary.port}/`,
      `http://[::ffff:127.0.0.1]:${canary.port}/`,
      `http://2130706433:${canary.port}/`,
      `http://0177.0.0.1:${canary.port}/`,
      `http://[::1]:${canary.port}/`,
      `http://localhost:${canary.port}/`,
      "http://169.254.169.254/latest/meta-data/",
      "http://[::ffff:169.254.169.254]/",
      "http://192.168.2.1/",
      "http://10.0.0.1/",
      `http://rebind.test:${canary.port}/`,
    ]) {
      expect(await get(lan, url), url).toBe("ssrf.private_address");
    }
  });

  it("each loopback spelling is refused unless its address is allowed", async () => {
    const forms = ["[::ffff:127.0.0.1]", "2130706433", "0177.0.0.1", "[::1]"];
    for (const form of forms) {
      await expect(client([]).resolveTarget(`http://${form}:${canary.port}/`), form).rejects.toMatchObject({
        code: "ssrf.private_address",
      });
    }
    for (const form of forms.slice(0, 3)) {
      await expect(client(["127.0.0.1"]).resolveTarget(`http://${form}/`), form).resolves.toMatchObject({
        address: expect.stringMatching(/^127\.0\.0\.1$|^::ffff:7f00:1$/),
      });
    }
    await expect(client(["127.0.0.1"]).resolveTarget("http://[::1]/")).rejects.toMatchObject({
      code: "ssrf.private_address",
    });
    await expect(client(["::1"]).resolveTarget("http://[::1]/")).resolves.toMatchObject({ address: "::1" });
  });

  it("re-checks redirects: an allowed host redirecting to a non-allowed private address is refused", async () => {
    const allowed = client(["127.0.0.1"]);
    for (const route of ["/to-metadata", "/to-lan", "/to-v6-loopback"]) {
      homeRequests.length = 0;
      expect(await get(allowed, `http://127.0.0.1:${homePort}${route}`), route).toBe("ssrf.private_address");
      expect(homeRequests).toEqual([route]);
    }
  });

  it("a hostname entry opens that name only, never the metadata address it might resolve to", async () => {
    await expect(client(["nas.test"]).resolveTarget("http://nas.test/")).resolves.toMatchObject({
      address: "127.0.0.1",
    });
    await expect(client(["nas.test"]).resolveTarget("http://rebind.test/")).rejects.toMatchObject({
      code: "ssrf.private_address",
    });
    await expect(
      client(["nas-metadata.test"]).resolveTarget("http://nas-metadata.test/"),
    ).rejects.toMatchObject({ code: "ssrf.private_address" });
    expect(() => client(["10.0.0.0/33"])).toThrow(/allowHosts/);
    expect(() => client(["not a host"])).toThrow(/allowHosts/);
  });
});

describe("redirects and credentials", () => {
  it("drops Authorization when a redirect leaves the origin", async () => {
    const tools = await harness({ services: { safeHttp: guardedClient() } });
    const result = JSON.parse(
      await tools.call("http_request", {
        url: `http://public.test:${publicPort}/to-other-origin`,
        headers: { authorization: "Bearer only-for-public-test" },
      }),
    );
    expect(JSON.parse(result.body)).toMatchObject({ auth: null, host: `other.test:${publicPort}` });
  });
});

describe("allowHosts at start-up", () => {
  async function startWith(allowHosts: string[]) {
    const lines: string[] = [];
    const destination = {
      write: (line: string) => void lines.push(line),
    } as unknown as NodeJS.WritableStream;
    const app = new MagpieApp({
      config: testConfig({ security: { ssrf: { allowHosts } } }),
      logger: createLogger({ destination, level: "info" }),
      model: null,
      features: [],
      listen: false,
      loadChannels: false,
    });
    try {
      await app.start();
    } finally {
      await app.stop();
    }
    return lines.map((line) => JSON.parse(line) as { msg: string; allowHosts?: string[] });
  }

  it("logs the owner's private hosts once; a bad entry stops start-up", async () => {
    const logged = (await startWith(["192.168.1.50", "10.0.0.0/24"])).filter(
      (line) => line.msg === "ssrf-allow-hosts",
    );
    expect(logged).toHaveLength(1);
    expect(logged[0]!.allowHosts).toEqual(["192.168.1.50", "10.0.0.0/24"]);
    expect((await startWith([])).some((line) => line.msg === "ssrf-allow-hosts")).toBe(false);
    await expect(startWith(["10.0.0.0/99"])).rejects.toThrow(/security\.ssrf\.allowHosts/);
  });
});
