import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeServer, listen, sendJson } from "./http-util.js";
import { parseMultipart, readBytes, type UploadedFile } from "./multipart.js";

/**
 * A Telegram Bot API server on 127.0.0.1 that the real grammY client talks to (`apiRoot`). It queues
 * updates for long polling (honouring `offset` as the acknowledgement), answers the methods Magpie uses,
 * records every call, and can fail a call once (429 + retry_after, 400 "can't parse entities", …),
 * reject the token (401) or drop connections.
 */

export interface TelegramCall {
  method: string;
  token: string;
  body: Record<string, unknown>;
  /** The fake answered this call with a scripted error. */
  failed?: boolean;
  /** Files uploaded with a multipart call, by the field that names them (`photo`, `document`). */
  uploads?: Record<string, UploadedFile>;
}

interface ScriptedFailure {
  method: string;
  /** Calls of `method` to let through before this failure applies. */
  skip: number;
  errorCode: number;
  description: string;
  retryAfter?: number;
}

export const TELEGRAM_BOT = { id: 4242, is_bot: true, first_name: "Magpie", username: "magpie_test_bot" };

export class FakeTelegram {
  readonly calls: TelegramCall[] = [];
  /** Updates not yet acknowledged (an update leaves when a getUpdates asks for a higher offset). */
  readonly pending: Array<Record<string, unknown> & { update_id: number }> = [];
  /** Highest `offset` seen in getUpdates: everything below it is acknowledged. */
  acknowledgedOffset = 0;
  validToken = "123456:TEST-TOKEN";
  /** How long a long poll is held at most (the client asks for up to 30 s). */
  holdMs = 150;
  /** While true, every request's socket is destroyed without an answer (network loss). */
  dropping = false;
  /**
   * While true, getUpdates is never answered and its socket stays open (a long poll that hangs: the client thinks
   * it is connected and receives nothing); other methods still answer. `resumeReceives()` ends it.
   */
  stalled = false;
  /** Long polls held by a stall that are still open, answered on resume. */
  private readonly stalledPolls = new Set<() => void>();
  private failures: ScriptedFailure[] = [];
  private waiter: (() => void) | null = null;
  private nextUpdateId = 1;
  private nextMessageId = 5000;
  private readonly server: Server;
  private port = 0;
  readonly files = new Map<string, { path: string; content: Buffer }>();
  /** Paths of every request outside the Bot API methods (file downloads), in order. */
  readonly fileRequests: string[] = [];

  constructor() {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error) => {
        sendJson(response, 500, { ok: false, error_code: 500, description: String(error) });
      });
    });
  }

  async start(): Promise<this> {
    this.port = await listen(this.server);
    return this;
  }

  get apiRoot(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    this.waiter?.();
    await closeServer(this.server);
  }

  /** Long polls hang from now on (see `stalled`). */
  stallReceives(): void {
    this.stalled = true;
  }

  /** Long polls are answered again; one still held from the stall is answered now. */
  resumeReceives(): void {
    this.stalled = false;
    for (const answer of [...this.stalledPolls]) answer();
  }

  /** Queues an update (update_id assigned) and wakes a waiting long poll. */
  pushUpdate(update: Record<string, unknown>): number {
    const updateId = this.nextUpdateId++;
    this.pending.push({ update_id: updateId, ...update });
    this.waiter?.();
    return updateId;
  }

  /** Queues a text message update; returns the Telegram message id. */
  pushMessage(fields: {
    chat: { id: number; type: "private" | "group" | "supergroup"; title?: string; is_forum?: boolean };
    from: { id: number; first_name?: string; username?: string; is_bot?: boolean };
    text?: string;
    entities?: unknown[];
    replyTo?: Record<string, unknown>;
    threadId?: number;
    extra?: Record<string, unknown>;
  }): number {
    const messageId = this.nextMessageId++;
    this.pushUpdate({
      message: {
        message_id: messageId,
        date: Math.floor(Date.now() / 1000),
        chat: fields.chat,
        from: { is_bot: false, first_name: "User", ...fields.from },
        ...(fields.text !== undefined ? { text: fields.text } : {}),
        ...(fields.entities ? { entities: fields.entities } : {}),
        ...(fields.replyTo ? { reply_to_message: fields.replyTo } : {}),
        ...(fields.threadId ? { message_thread_id: fields.threadId, is_topic_message: true } : {}),
        ...fields.extra,
      },
    });
    return messageId;
  }

  /** The next call to `method` (after `skip` successful ones) fails with this Bot API error, once. */
  failNext(method: string, errorCode: number, description: string, retryAfter?: number, skip = 0): void {
    this.failures.push({ method, errorCode, description, retryAfter, skip });
  }

  callsOf(method: string): TelegramCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  /** Text of every delivered sendMessage, in order. */
  sentTexts(): string[] {
    return this.callsOf("sendMessage")
      .filter((call) => !call.failed)
      .map((call) => String(call.body.text));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.dropping) {
      request.socket.destroy();
      return;
    }
    const url = request.url ?? "";
    if (!/^\/bot[^/]+\//.test(url)) this.fileRequests.push(url);
    const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(url);
    if (file) {
      const found = [...this.files.values()].find((entry) => entry.path === file[2]);
      if (file[1] !== this.validToken || !found) return sendJson(response, 404, { ok: false });
      response.writeHead(200, { "content-type": "application/octet-stream" });
      response.end(found.content);
      return;
    }
    const match = /^\/bot([^/]+)\/(?:test\/)?(\w+)/.exec(url);
    if (!match) return sendJson(response, 404, { ok: false, error_code: 404, description: "Not Found" });
    const [, token = "", method = ""] = match;
    const call: TelegramCall = { method, token, ...(await parseCall(request)) };
    const body = call.body;
    if (token !== this.validToken) {
      this.calls.push({ ...call, failed: true });
      return sendJson(response, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    }
    const failureIndex = this.failures.findIndex((failure) => failure.method === method);
    const failure = failureIndex >= 0 ? this.failures[failureIndex]! : undefined;
    if (failure && failure.skip > 0) failure.skip--;
    else if (failure) {
      this.failures.splice(failureIndex, 1);
      this.calls.push({ ...call, failed: true });
      return sendJson(response, failure.errorCode, {
        ok: false,
        error_code: failure.errorCode,
        description: failure.description,
        ...(failure.retryAfter !== undefined ? { parameters: { retry_after: failure.retryAfter } } : {}),
      });
    }
    this.calls.push(call);
    const ok = (result: unknown) => sendJson(response, 200, { ok: true, result });
    switch (method) {
      case "getMe":
        return ok({
          ...TELEGRAM_BOT,
          can_join_groups: true,
          can_read_all_group_messages: false,
          supports_inline_queries: false,
        });
      case "deleteWebhook":
      case "setWebhook":
      case "sendChatAction":
      case "answerCallbackQuery":
        return ok(true);
      case "getUpdates":
        return this.getUpdates(body, request, ok);
      case "sendMessage":
        return ok({
          message_id: this.nextMessageId++,
          date: Math.floor(Date.now() / 1000),
          chat: { id: body.chat_id, type: "private" },
          from: TELEGRAM_BOT,
          text: body.text,
        });
      case "sendPhoto":
      case "sendVoice":
      case "sendDocument": {
        const field = method === "sendPhoto" ? "photo" : method === "sendVoice" ? "voice" : "document";
        const upload = call.uploads?.[field];
        if (!upload)
          return sendJson(response, 400, {
            ok: false,
            error_code: 400,
            description: `Bad Request: there is no ${field} in the request`,
          });
        const fileId = `file-${this.nextMessageId}`;
        return ok({
          message_id: this.nextMessageId++,
          date: Math.floor(Date.now() / 1000),
          chat: { id: body.chat_id, type: "private" },
          from: TELEGRAM_BOT,
          ...(body.caption !== undefined ? { caption: body.caption } : {}),
          ...(field === "photo"
            ? { photo: [{ file_id: fileId, file_unique_id: fileId, width: 1, height: 1 }] }
            : field === "voice"
              ? { voice: { file_id: fileId, file_unique_id: fileId, duration: 1 } }
              : { document: { file_id: fileId, file_unique_id: fileId, file_name: upload.filename } }),
        });
      }
      case "editMessageText":
        return ok({
          message_id: body.message_id,
          date: 0,
          chat: { id: body.chat_id, type: "private" },
          text: body.text,
        });
      case "getFile": {
        const entry = this.files.get(String(body.file_id));
        if (!entry)
          return sendJson(response, 400, {
            ok: false,
            error_code: 400,
            description: "Bad Request: invalid file_id",
          });
        return ok({
          file_id: body.file_id,
          file_unique_id: "u",
          file_size: entry.content.length,
          file_path: entry.path,
        });
      }
      default:
        return sendJson(response, 404, {
          ok: false,
          error_code: 404,
          description: `Not Found: method ${method}`,
        });
    }
  }

  private getUpdates(
    body: Record<string, unknown>,
    request: IncomingMessage,
    ok: (result: unknown) => void,
  ): void {
    if (this.stalled) {
      const answer = () => {
        this.stalledPolls.delete(answer);
        if (!request.socket.destroyed) this.getUpdates(body, request, ok);
      };
      this.stalledPolls.add(answer);
      request.on("close", () => this.stalledPolls.delete(answer));
      return;
    }
    const offset = typeof body.offset === "number" ? body.offset : 0;
    this.acknowledgedOffset = Math.max(this.acknowledgedOffset, offset);
    while (this.pending.length > 0 && this.pending[0]!.update_id < offset) this.pending.shift();
    const limit = typeof body.limit === "number" ? body.limit : 100;
    const timeoutSeconds = typeof body.timeout === "number" ? body.timeout : 0;
    if (this.pending.length > 0 || timeoutSeconds === 0) {
      ok(this.pending.slice(0, limit));
      return;
    }
    const timer = setTimeout(() => finish(), Math.min(this.holdMs, timeoutSeconds * 1000));
    const finish = () => {
      clearTimeout(timer);
      if (this.waiter === finish) this.waiter = null;
      if (!request.socket.destroyed) ok(this.pending.slice(0, limit));
    };
    this.waiter = finish;
    request.on("close", () => clearTimeout(timer));
  }
}

/**
 * The body of a Bot API call: JSON, or multipart when grammY uploads a file — then every field is text (objects
 * JSON-encoded) and a file field holds `attach://<part>`, which is resolved to that part.
 */
async function parseCall(
  request: IncomingMessage,
): Promise<{ body: Record<string, unknown>; uploads?: Record<string, UploadedFile> }> {
  const raw = await readBytes(request);
  const multipart = parseMultipart(raw, request.headers["content-type"] ?? "");
  if (!multipart)
    return { body: raw.length > 0 ? (JSON.parse(raw.toString("utf8")) as Record<string, unknown>) : {} };
  const body: Record<string, unknown> = {};
  const uploads: Record<string, UploadedFile> = {};
  for (const [key, value] of Object.entries(multipart.fields)) {
    const attached = /^attach:\/\/(.+)$/.exec(value);
    const file = attached ? multipart.files[attached[1]!] : undefined;
    if (file) uploads[key] = file;
    body[key] = /^[[{]/.test(value) ? JSON.parse(value) : value;
  }
  return { body, uploads };
}
