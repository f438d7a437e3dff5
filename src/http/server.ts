import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { HttpHandler, HttpRoutes } from "./routes.js";

/** The one HTTP server: health checks and webhooks, dispatched by method and path. */
export class HttpServer implements HttpRoutes {
  private readonly routes = new Map<string, HttpHandler>();
  private readonly server: http.Server;

  constructor(private readonly logger: Logger) {
    this.server = http.createServer((request, response) => void this.dispatch(request, response));
    this.server.keepAliveTimeout = 5_000;
  }

  route(method: "GET" | "POST", path: string, handler: HttpHandler): void {
    this.routes.set(`${method} ${path}`, handler);
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

  private async dispatch(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    const handler = this.routes.get(`${request.method} ${path}`);
    if (!handler) {
      const known = [...this.routes.keys()].some((key) => key.endsWith(` ${path}`));
      sendJson(response, known ? 405 : 404, { error: known ? "method not allowed" : "not found" });
      return;
    }
    try {
      await handler(request, response);
    } catch (error) {
      this.logger.error({ err: error, path }, "http-handler-failed");
      if (!response.headersSent) sendJson(response, 500, { error: "internal error" });
      else response.end();
    }
  }
}

export function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  response.end(JSON.stringify(body));
}
