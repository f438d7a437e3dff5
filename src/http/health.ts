import type { ChannelAdapter, ChannelStatus } from "../core/types.js";
import type { Store } from "../store/index.js";
import type { LoopHealth } from "./loop-monitor.js";
import type { HttpApp } from "./server.js";

/**
 * `GET /healthz` (alive: 503 while the event loop is or lately was blocked past `http.maxEventLoopBlockMs`) and
 * `GET /readyz` (database open and every enabled channel connected; `down` names those that are not — a channel
 * silent past its liveness limit says `reconnecting` until it completes a receive cycle again).
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
    const down = Object.keys(channels).filter((name) => channels[name]?.state !== "connected");
    const ready = deps.started() && database && down.length === 0;
    return c.json({ ready, database: database ? "open" : "closed", down, channels }, ready ? 200 : 503);
  });
}
