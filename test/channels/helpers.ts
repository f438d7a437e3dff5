import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ChannelDeps } from "../../channels/channel-deps.js";
import { parseConfig } from "../../src/config/load.js";
import type { AcceptResult, ButtonPress, InboundMessage, InboundSink } from "../../src/core/types.js";
import type { HttpHandler, HttpRoutes } from "../../src/http/routes.js";
import { silentLogger } from "../../src/log/logger.js";
import { Store } from "../../src/store/index.js";
import { closeServer, listen } from "../fakes/http-util.js";

/** Routes registered by adapters, served by a real HTTP server on 127.0.0.1 (webhook tests). */
export class RouteServer implements HttpRoutes {
  private readonly routes = new Map<string, HttpHandler>();
  private server: Server | null = null;
  port = 0;

  route(method: "GET" | "POST", routePath: string, handler: HttpHandler): void {
    this.routes.set(`${method} ${routePath}`, handler);
  }

  has(method: string, routePath: string): boolean {
    return this.routes.has(`${method} ${routePath}`);
  }

  async start(): Promise<string> {
    this.server = createServer((request, response) => {
      const handler = this.routes.get(`${request.method} ${(request.url ?? "").split("?")[0]}`);
      if (!handler) {
        response.writeHead(404).end();
        return;
      }
      Promise.resolve(handler(request, response)).catch(() => {
        if (!response.headersSent) response.writeHead(500).end();
      });
    });
    this.port = await listen(this.server);
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    if (this.server) await closeServer(this.server);
  }
}

/** Builds ChannelDeps from a `channels:` config section (validated like a real config file). */
export function channelDeps(
  channels: Record<string, unknown>,
  http: HttpRoutes = new RouteServer(),
): ChannelDeps {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-channel-"));
  const config = parseConfig({ channels }, { env: {}, cwd });
  return { config, logger: silentLogger(), http, store: Store.open(":memory:") };
}

/** An InboundSink that records everything and answers "duplicate" for a repeated message id. */
export class RecordingSink implements InboundSink {
  readonly messages: InboundMessage[] = [];
  readonly presses: ButtonPress[] = [];
  private readonly seen = new Set<string>();
  /** Optional hook run before accepting (e.g. to hold the ack). */
  beforeAccept: ((inbound: InboundMessage) => Promise<void>) | null = null;

  async message(inbound: InboundMessage): Promise<AcceptResult> {
    if (this.beforeAccept) await this.beforeAccept(inbound);
    if (this.seen.has(inbound.messageId)) return { status: "duplicate" };
    this.seen.add(inbound.messageId);
    this.messages.push(inbound);
    return { status: "accepted", inboxId: this.messages.length };
  }

  async buttonPressed(press: ButtonPress): Promise<void> {
    this.presses.push(press);
  }
}
