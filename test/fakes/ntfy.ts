import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One message the fake ntfy server accepted, as a subscriber's phone would get it. */
export interface NtfyMessage {
  id: string;
  topic: string;
  message: string;
  title?: string;
  /** 1 (min) … 5 (urgent); 3 when not given. */
  priority: number;
  tags: string[];
  /** The Authorization header the publisher sent, if any. */
  authorization?: string;
}

export interface NtfyFake {
  /** `http://127.0.0.1:<port>`: give it as notify.ntfy.url. */
  url: string;
  messages: NtfyMessage[];
  /** Every request seen, accepted or not (method, path, Authorization). */
  requests: Array<{ method: string; path: string; authorization?: string }>;
  /** Resolves once `count` messages have arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<NtfyMessage[]>;
  close(): Promise<void>;
}

const PRIORITY_NAMES: Record<string, number> = { min: 1, low: 2, default: 3, high: 4, urgent: 5, max: 5 };

function priorityOf(value: unknown): number | null {
  if (value === undefined || value === null || value === "") return 3;
  const named = PRIORITY_NAMES[String(value).toLowerCase()];
  if (named) return named;
  const number = Number(value);
  return Number.isInteger(number) && number >= 1 && number <= 5 ? number : null;
}

/**
 * A protocol fake of ntfy's publish API (https://docs.ntfy.sh/publish/) on 127.0.0.1: `POST|PUT /<topic>` with
 * the body as message and `Title`/`Priority`/`Tags` headers, or a JSON publish `POST /` with `{topic, message,
 * title, priority, tags}`. With `token` set, a publish without `Authorization: Bearer <token>` gets 403 as on a
 * protected topic. It answers like ntfy: `{id, time, event: "message", topic, message}`.
 */
export async function startNtfyFake(options: { token?: string } = {}): Promise<NtfyFake> {
  const messages: NtfyMessage[] = [];
  const requests: NtfyFake["requests"] = [];
  const waiters: Array<() => void> = [];

  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const authorization = request.headers.authorization;
    const path = request.url ?? "/";
    requests.push({ method: request.method ?? "", path, ...(authorization ? { authorization } : {}) });
    const reply = (status: number, payload: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(payload));
    };
    const fail = (status: number, error: string) =>
      reply(status, { code: status * 100, http: status, error });
    if (request.method !== "POST" && request.method !== "PUT") return fail(405, "method not allowed");
    if (options.token && authorization !== `Bearer ${options.token}`) return fail(403, "forbidden");

    let fields: Record<string, unknown>;
    if (path === "/" || path === "") {
      try {
        fields = JSON.parse(body) as Record<string, unknown>;
      } catch {
        return fail(400, "invalid request: request body must be message JSON");
      }
    } else {
      const header = (name: string) => {
        const value = request.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      fields = {
        topic: decodeURIComponent(path.slice(1).split("?")[0] ?? ""),
        message: body,
        title: header("title") ?? header("t"),
        priority: header("priority") ?? header("p"),
        tags: (header("tags") ?? header("ta"))?.split(",").map((tag) => tag.trim()),
      };
    }
    const topic = typeof fields.topic === "string" ? fields.topic : "";
    if (!/^[-_A-Za-z0-9]{1,64}$/.test(topic)) return fail(400, "invalid topic");
    const priority = priorityOf(fields.priority);
    if (priority === null) return fail(400, "invalid priority");
    const message: NtfyMessage = {
      id: randomUUID().slice(0, 12),
      topic,
      message: typeof fields.message === "string" && fields.message ? fields.message : "triggered",
      priority,
      tags: Array.isArray(fields.tags) ? fields.tags.map(String) : [],
      ...(typeof fields.title === "string" ? { title: fields.title } : {}),
      ...(authorization ? { authorization } : {}),
    };
    messages.push(message);
    for (const wake of waiters.splice(0)) wake();
    reply(200, {
      id: message.id,
      time: Math.floor(Date.now() / 1000),
      event: "message",
      topic,
      message: message.message,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    messages,
    requests,
    async waitFor(count, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(`ntfy fake: ${messages.length} of ${count} messages after ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return messages.slice(0, count);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
