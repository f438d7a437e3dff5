import type { ChannelAdapter, ChannelStatus } from "../core/types.js";
import type { Store } from "../store/index.js";
import type { HttpServer } from "./server.js";
import { sendJson } from "./server.js";

/** `GET /healthz` (alive) and `GET /readyz` (database open and every enabled channel connected). */
export function registerHealthRoutes(
  server: HttpServer,
  deps: { store: Store; adapters: () => ReadonlyMap<string, ChannelAdapter>; started: () => boolean },
): void {
  server.route("GET", "/healthz", (_request, response) => sendJson(response, 200, { status: "ok" }));
  server.route("GET", "/readyz", (_request, response) => {
    const channels: Record<string, ChannelStatus> = {};
    for (const [name, adapter] of deps.adapters()) channels[name] = adapter.status();
    const database = deps.store.isOpen;
    const ready =
      deps.started() && database && Object.values(channels).every((status) => status.state === "connected");
    sendJson(response, ready ? 200 : 503, { ready, database: database ? "open" : "closed", channels });
  });
}
