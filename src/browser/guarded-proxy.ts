import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { errorMessage } from "../lib/errors.js";
import type { SafeHttpClient } from "../security/safe-http.js";

/** A request the SSRF guard refused, as reported in the browser tool's result. */
export interface RefusedRequest {
  url: string;
  code: string;
  reason: string;
}

/** Header on the proxy's own refusal answer, so a refused navigation hop can be told from a site's 403. */
export const REFUSED_HEADER = "x-magpie-refused";

/** Hop-by-hop headers a proxy must not forward. */
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * The browser's only way out: an HTTP proxy on 127.0.0.1 (one per session) that judges every request and
 * tunnel with the SSRF guard and connects to the judged address itself. Page interception sees only first
 * hops; this also catches redirect hops, workers and WebSockets, and Chromium never resolves a name itself
 * (no DNS rebinding between the check and the connection).
 */
export class GuardedProxy {
  private readonly server: http.Server;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly guard: SafeHttpClient,
    private readonly onRefused: (refused: RefusedRequest) => void,
  ) {
    this.server = http.createServer((request, response) => void this.forward(request, response));
    this.server.on("connect", (request, socket: net.Socket, head) => void this.tunnel(request, socket, head));
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  /** Starts a proxy on a free loopback port. */
  static async start(
    guard: SafeHttpClient,
    onRefused: (refused: RefusedRequest) => void,
  ): Promise<GuardedProxy> {
    const proxy = new GuardedProxy(guard, onRefused);
    await new Promise<void>((resolve) => proxy.server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /** `http://127.0.0.1:<port>`, for Chromium's proxy setting. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The address to connect to, or the refusal (reported) when the guard refuses `url`. */
  private async judge(url: string): Promise<{ address: string } | { refused: RefusedRequest }> {
    try {
      return { address: (await this.guard.resolveTarget(url)).address };
    } catch (error) {
      const code = (error as { code?: string }).code ?? "ssrf.refused";
      const refused = { url, code, reason: errorMessage(error) };
      this.onRefused(refused);
      return { refused };
    }
  }

  private async forward(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const target = request.url ?? "";
    const verdict = await this.judge(target);
    if ("refused" in verdict) {
      response.writeHead(403, { "content-type": "text/plain", [REFUSED_HEADER]: verdict.refused.code });
      response.end(`Refused by Magpie's SSRF guard: ${verdict.refused.reason}`);
      return;
    }
    const { address } = verdict;
    const url = new URL(target);
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(([name]) => !HOP_HEADERS.has(name.toLowerCase())),
    );
    const upstream = http.request(
      {
        host: address,
        port: url.port || 80,
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers: { ...headers, host: url.host },
        setHost: false,
      },
      (answer) => {
        const answerHeaders = Object.fromEntries(
          Object.entries(answer.headers).filter(([name]) => !HOP_HEADERS.has(name.toLowerCase())),
        );
        response.writeHead(answer.statusCode ?? 502, answerHeaders);
        answer.pipe(response);
      },
    );
    upstream.on("error", () => {
      if (!response.headersSent) response.writeHead(502);
      response.end();
    });
    request.pipe(upstream);
  }

  private async tunnel(request: http.IncomingMessage, socket: net.Socket, head: Buffer): Promise<void> {
    socket.on("error", () => socket.destroy());
    const [host = "", port = "443"] = splitHostPort(request.url ?? "");
    // A tunnel carries TLS (or a WebSocket) to host:port: judged like an https URL to that host.
    const verdict = await this.judge(`https://${host.includes(":") ? `[${host}]` : host}:${port}/`);
    if ("refused" in verdict) {
      socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    const upstream = net.connect(Number(port), verdict.address, () => {
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on("error", () => socket.end("HTTP/1.1 502 Bad Gateway\r\n\r\n"));
    socket.on("close", () => upstream.destroy());
  }

  /** Stops listening and drops open connections. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** `host:port` or `[v6]:port` → [host, port]. */
function splitHostPort(authority: string): [string, string] {
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(authority);
  if (bracketed) return [bracketed[1]!, bracketed[2]!];
  const index = authority.lastIndexOf(":");
  return index > 0 ? [authority.slice(0, index), authority.slice(index + 1)] : [authority, "443"];
}
