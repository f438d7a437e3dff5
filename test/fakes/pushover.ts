import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One notification the fake received, as Pushover would see it. */
export interface RecordedNotification {
  method: string;
  /** The Host header: api.pushover.net when the client went through the proxy option. */
  host: string;
  /** Request target: `/1/messages.json`, or an absolute URL from proxy-style clients. */
  path: string;
  fields: Record<string, string>;
}

export interface PushoverFake {
  /** `http://127.0.0.1:<port>` — give it as notify.pushover.proxy. */
  proxyUrl: string;
  notifications: RecordedNotification[];
  /** Answers the next `count` requests with `status` and a Pushover error body. */
  failNext(status: number, count?: number): void;
  /** Resolves once `count` notifications have arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<RecordedNotification[]>;
  close(): Promise<void>;
}

/**
 * A Pushover API fake reached as an HTTP proxy on 127.0.0.1: it accepts the proxied
 * `POST https://api.pushover.net/1/messages.json` (multipart form) and records it. No real network.
 */
export async function startPushoverFake(): Promise<PushoverFake> {
  const notifications: RecordedNotification[] = [];
  let failures: { status: number; remaining: number } | null = null;
  const waiters: Array<() => void> = [];

  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const reply = (status: number, payload: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(payload));
    };
    const target = request.url ?? "";
    if (request.method !== "POST" || !target.endsWith("/1/messages.json")) {
      reply(404, {
        status: 0,
        errors: [`no such endpoint ${request.method} ${target}`],
        request: randomUUID(),
      });
      return;
    }
    if (failures && failures.remaining > 0) {
      failures.remaining -= 1;
      reply(failures.status, { status: 0, errors: ["fake failure"], request: randomUUID() });
      return;
    }
    const fields = parseForm(body, request.headers["content-type"] ?? "");
    const errors: string[] = [];
    if (!fields.token) errors.push("application token is invalid");
    if (!fields.user) errors.push("user identifier is not a valid user, group, or subscribed user key");
    if (!fields.message) errors.push("message cannot be blank");
    if (errors.length > 0) {
      reply(400, { status: 0, errors, request: randomUUID() });
      return;
    }
    notifications.push({ method: request.method, host: request.headers.host ?? "", path: target, fields });
    for (const wake of waiters.splice(0)) wake();
    reply(200, { status: 1, request: randomUUID() });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    proxyUrl: `http://127.0.0.1:${port}`,
    notifications,
    failNext(status, count = 1) {
      failures = { status, remaining: count };
    },
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (notifications.length < count) {
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(`Pushover fake: expected ${count} notifications, got ${notifications.length}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 50));
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return notifications;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Parses multipart/form-data (tolerant of the library's missing CRLF before the closing boundary) or urlencoded. */
function parseForm(body: string, contentType: string): Record<string, string> {
  const boundary = /boundary=([^;]+)/.exec(contentType)?.[1];
  if (!boundary) return Object.fromEntries(new URLSearchParams(body));
  const fields: Record<string, string> = {};
  for (const part of body.split(`--${boundary}`)) {
    const match = /Content-Disposition: form-data; name="([^"]+)"\r\n\r\n([\s\S]*)$/i.exec(
      part.replace(/^\r\n/, ""),
    );
    if (match) fields[match[1]!] = match[2]!.replace(/\r\n$/, "");
  }
  return fields;
}
