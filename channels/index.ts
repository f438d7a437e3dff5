import type { IncomingMessage, ServerResponse } from "node:http";
import type { MagpieConfig } from "../src/config/schema.js";
import type { ChannelAdapter } from "../src/core/types.js";
import type { HttpHandler, HttpRoutes } from "../src/http/routes.js";
import { enabledChannelEntries } from "./catalog.js";
import type { ChannelDeps } from "./channel-deps.js";
import type { ChannelEntry } from "./channel-entry.js";

export type { ChannelDeps };

/** Which chat channels are on: `channels.<name>.enabled`, or by default whether its credentials are present. */
export function enabledChatChannels(config: MagpieConfig): string[] {
  return enabledChannelEntries(config).map((entry) => entry.name);
}

/**
 * Creates the chat-platform adapters enabled in config, from the channel catalog. Each library is imported
 * only when its channel is enabled, so start-up stays lean. The console channel is separate.
 */
export async function loadChatChannels(deps: ChannelDeps): Promise<ChannelAdapter[]> {
  const adapters: ChannelAdapter[] = [];
  for (const entry of enabledChannelEntries(deps.config)) adapters.push(await loadChatChannel(entry, deps));
  return adapters;
}

/**
 * Builds one catalog channel's adapter (not started). Its HTTP routes (`/telegram/webhook`, `/slack/events`) go
 * through a table that a later adapter of the same channel takes over (a config reload restarting it), and that
 * `releaseChannelRoutes` empties when the channel is removed (the path answers 404).
 */
export async function loadChatChannel(entry: ChannelEntry, deps: ChannelDeps): Promise<ChannelAdapter> {
  const view = routeTableOf(deps.http).view();
  const adapter = await entry.create({
    ...deps,
    http: view,
    logger: deps.logger.child({ channel: entry.name }),
  });
  views.set(adapter, view);
  return adapter;
}

/** The adapter's routes answer 404 from now on (unless a newer adapter registered them again). */
export function releaseChannelRoutes(adapter: ChannelAdapter): void {
  views.get(adapter)?.release();
}

interface RouteView extends HttpRoutes {
  release(): void;
}

const views = new WeakMap<ChannelAdapter, RouteView>();
const tables = new WeakMap<HttpRoutes, RouteTable>();

function routeTableOf(http: HttpRoutes): RouteTable {
  let table = tables.get(http);
  if (!table) {
    table = new RouteTable(http);
    tables.set(http, table);
  }
  return table;
}

/**
 * The HTTP server's router keeps the first handler of a path for good; channels that come and go register once
 * there, and each request goes to the handler of the adapter that registered the path last.
 */
class RouteTable {
  private readonly current = new Map<string, { handler: HttpHandler; owner: object }>();
  /** Paths registered on the server (once each). */
  private readonly registered = new Set<string>();

  constructor(private readonly http: HttpRoutes) {}

  view(): RouteView {
    const owner = {};
    const keys = new Set<string>();
    return {
      route: (method, path, handler) => {
        const key = `${method} ${path}`;
        if (!this.registered.has(key)) {
          this.registered.add(key);
          this.http.route(method, path, (request, response) => this.dispatch(key, request, response));
        }
        this.current.set(key, { handler, owner });
        keys.add(key);
      },
      release: () => {
        for (const key of keys) if (this.current.get(key)?.owner === owner) this.current.delete(key);
      },
    };
  }

  private async dispatch(key: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
    const route = this.current.get(key);
    if (route) return route.handler(request, response);
    response.writeHead(404, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: "not found" }));
  }
}
