import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { registerHealthRoutes } from "../../src/http/health.js";
import { HttpServer } from "../../src/http/server.js";
import { silentLogger } from "../../src/log/logger.js";
import { Store } from "../../src/store/index.js";

describe("HttpServer", () => {
  let server: HttpServer;
  let store: Store;

  afterEach(async () => {
    await server.close();
    store.close();
  });

  async function start(started = true): Promise<string> {
    server = new HttpServer(silentLogger());
    store = Store.open(":memory:");
    registerHealthRoutes(server.app, { store, adapters: () => new Map(), started: () => started });
    const address: AddressInfo = await server.listen(0, "127.0.0.1");
    return `http://127.0.0.1:${address.port}`;
  }

  it("answers /healthz and /readyz", async () => {
    const url = await start();
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, database: "open", down: [], channels: {} });
  });

  it("/readyz is 503 before start-up finished", async () => {
    const url = await start(false);
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
  });

  it("serves Node-style handlers registered after it listens, with their raw body", async () => {
    const url = await start();
    server.route("POST", "/hook", async (request, response) => {
      let body = "";
      for await (const chunk of request) body += chunk;
      response.writeHead(200, { "content-type": "text/plain" }).end(`got ${body}`);
    });
    const answer = await fetch(`${url}/hook`, { method: "POST", body: "payload" });
    expect(await answer.text()).toBe("got payload");
  });

  it("404 for an unknown path, 405 for a known path with another method", async () => {
    const url = await start();
    server.route("POST", "/hook", (_request, response) => void response.writeHead(204).end());
    expect((await fetch(`${url}/nowhere`)).status).toBe(404);
    expect((await fetch(`${url}/hook`)).status).toBe(405);
  });

  it("a failing handler answers 500 and the server keeps serving", async () => {
    const url = await start();
    server.route("POST", "/boom", () => {
      throw new Error("boom");
    });
    expect((await fetch(`${url}/boom`, { method: "POST" })).status).toBe(500);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });
});
