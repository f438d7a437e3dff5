import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { registerHealthRoutes } from "../../src/http/health.js";
import type { LoopHealth } from "../../src/http/loop-monitor.js";
import { HttpServer } from "../../src/http/server.js";
import { silentLogger } from "../../src/log/logger.js";
import { Store } from "../../src/store/index.js";

describe("/healthz and the event loop", () => {
  const server = new HttpServer(silentLogger());
  const store = Store.open(":memory:");
  let loop: LoopHealth = { healthy: true, blockedMs: 0 };
  registerHealthRoutes(server.app, {
    store,
    adapters: () => new Map(),
    started: () => true,
    loop: { status: () => loop },
  });

  afterEach(async () => {
    await server.close();
  });

  it("answers 503 with the stall's length while the loop is unhealthy, 200 otherwise; /readyz is not affected", async () => {
    const address: AddressInfo = await server.listen(0, "127.0.0.1");
    const url = `http://127.0.0.1:${address.port}`;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    loop = { healthy: false, blockedMs: 6_200 };
    const blocked = await fetch(`${url}/healthz`);
    expect(blocked.status).toBe(503);
    expect(await blocked.json()).toEqual({ status: "blocked", eventLoopBlockedMs: 6_200 });
    // Readiness is about the database and the channels; liveness is what a restart fixes.
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    loop = { healthy: true, blockedMs: 0 };
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
    store.close();
  });
});
