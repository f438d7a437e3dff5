import type { IncomingMessage, ServerResponse } from "node:http";

export type HttpHandler = (request: IncomingMessage, response: ServerResponse) => void | Promise<void>;

/** Routes on the one HTTP server (health, webhooks). */
export interface HttpRoutes {
  route(method: "GET" | "POST", path: string, handler: HttpHandler): void;
}
