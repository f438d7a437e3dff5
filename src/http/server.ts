import type http from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer, type HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import type { Logger } from "pino";
import type { HttpHandler, HttpRoutes } from "./routes.js";

/** The Hono app every route is mounted on; handlers reach Node's request and response through `c.env`. */
export type HttpApp = Hono<{ Bindings: HttpBindings }>;

/** A sub-app a feature builds alone; the app mounts it at the root (`app.route("/", pages)`). */
export function createPages(): HttpApp {
  return new Hono<{ Bindings: HttpBindings }>();
}

/** The one HTTP server (Hono on Node): health checks, webhooks and, when enabled, the dashboard. */
export class HttpServer implements HttpRoutes {
  /**
   * The trie router accepts routes after the first request: channels register their webhook once they connect,
   * which is after the server listens (Hono's default router is frozen by its first match).
   */
  readonly app: HttpApp = new Hono<{ Bindings: HttpBindings }>({ router: new TrieRouter() });
  private readonly server: http.Server;
  private readonly methodsByPath = new Map<string, Set<string>>();

  constructor(private readonly logger: Logger) {
    this.app.notFound((c) => {
      const known = this.methodsByPath.has(c.req.path);
      return c.json({ error: known ? "method not allowed" : "not found" }, known ? 405 : 404);
    });
    this.app.onError((error, c) => {
      this.logger.error({ err: error, path: c.req.path }, "http-handler-failed");
      if (c.env.outgoing.headersSent) {
        c.env.outgoing.end();
        return RESPONSE_ALREADY_SENT;
      }
      return c.json({ error: "internal error" }, 500);
    });
    // The bot's own fetch calls keep Node's Request and Response (no global override).
    this.server = createAdaptorServer({ fetch: this.app.fetch, overrideGlobalObjects: false }) as http.Server;
    this.server.keepAliveTimeout = 5_000;
  }

  /** Serves a handler written against Node's request and response (the chat libraries' webhook listeners). */
  route(method: "GET" | "POST", path: string, handler: HttpHandler): void {
    const methods = this.methodsByPath.get(path) ?? new Set<string>();
    methods.add(method);
    this.methodsByPath.set(path, methods);
    this.app.on(method, path, async (c) => {
      await handler(c.env.incoming, c.env.outgoing);
      return RESPONSE_ALREADY_SENT;
    });
  }

  async listen(port: number, host: string): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  get address(): AddressInfo | null {
    return (this.server.address() as AddressInfo | null) ?? null;
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
    });
  }
}
