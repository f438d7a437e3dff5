import type { ChannelAdapter, ChannelStatus } from "../core/types.js";
import type { Store } from "../store/index.js";
import type { HttpApp } from "./server.js";

/** `GET /healthz` (alive) and `GET /readyz` (database open and every enabled channel connected). */
export function registerHealthRoutes(
  app: HttpApp,
  deps: { store: Store; adapters: () => ReadonlyMap<string, ChannelAdapter>; started: () => boolean },
): void {
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", (c) => {
    const channels: Record<string, ChannelStatus> = {};
    for (const [name, adapter] of deps.adapters()) channels[name] = adapter.status();
    const database = deps.store.isOpen;
    const ready =
      deps.started() && database && Object.values(channels).every((status) => status.state === "connected");
    return c.json({ ready, database: database ? "open" : "closed", channels }, ready ? 200 : 503);
  });
}
