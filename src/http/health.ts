import type { ChannelAdapter, ChannelStatus } from "../core/types.js";
import type { Store } from "../store/index.js";
import type { LoopHealth } from "./loop-monitor.js";
import type { HttpApp } from "./server.js";

/**
 * `GET /healthz` (alive: 503 while the event loop is or lately was blocked past `http.maxEventLoopBlockMs`) and
 * `GET /readyz` (database open and every enabled channel connected).
 */
export function registerHealthRoutes(
  app: HttpApp,
  deps: {
    store: Store;
    adapters: () => ReadonlyMap<string, ChannelAdapter>;
    started: () => boolean;
    loop?: { status(): LoopHealth };
  },
): void {
  app.get("/healthz", (c) => {
    const loop = deps.loop?.status();
    if (loop && !loop.healthy) return c.json({ status: "blocked", eventLoopBlockedMs: loop.blockedMs }, 503);
    return c.json({ status: "ok" });
  });
  app.get("/readyz", (c) => {
    const channels: Record<string, ChannelStatus> = {};
    for (const [name, adapter] of deps.adapters()) channels[name] = adapter.status();
    const database = deps.store.isOpen;
    const ready =
      deps.started() && database && Object.values(channels).every((status) => status.state === "connected");
    return c.json({ ready, database: database ? "open" : "closed", channels }, ready ? 200 : 503);
  });
}
