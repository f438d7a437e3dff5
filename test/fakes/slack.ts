import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { closeServer, listen, readBody, sendJson } from "./http-util.js";
import { readBytes } from "./multipart.js";

/**
 * Slack Web API (`/api/<method>`) and Socket Mode WebSocket on one 127.0.0.1 port, driven by the real
 * @slack/bolt client (`clientOptions.slackApiUrl`). Records every call and every envelope ack, can fail a
 * call once (429 + Retry-After, invalid_blocks, …), rejects unknown tokens with invalid_auth, can drop
 * every connection and can stall the socket (`stallReceives`: it stays open, pings go unanswered, a new
 * connection's upgrade waits — a server that stopped answering). `signedEvent()` builds a signed Events API
 * request for the HTTP mode.
 */

export interface SlackCall {
  method: string;
  token: string;
  body: Record<string, unknown>;
  failed?: boolean;
}

/** A file shared in a channel by files.completeUploadExternal. */
export interface SlackSharedFile {
  fileId: string;
  filename: string;
  title?: string;
  channel: string;
  threadTs?: string;
  initialComment?: string;
  content: Buffer;
}

export const SLACK_BOT_USER = "U0BOT";
export const SLACK_TEAM = "T0TEAM";

interface ScriptedFailure {
  method: string;
  status: number;
  error: string;
  retryAfterSeconds?: number;
}

export class FakeSlack {
  readonly calls: SlackCall[] = [];
  /** Envelope ids acknowledged over the socket, in order. */
  readonly acks: string[] = [];
  botToken = "xoxb-test-token";
  appToken = "xapp-test-token";
  dropping = false;
  connections = 0;
  /** When above 0, the server pings every socket this often, as Slack does (a test of inbound liveness sets it). */
  pingEveryMs = 0;
  /** While stalled, pings are not answered or sent and new upgrades wait (see `stallReceives`). */
  private stalled = false;
  private held: Array<{ request: IncomingMessage; socket: Duplex; head: Buffer }> = [];
  private sockets = new Set<WebSocket>();
  private failures: ScriptedFailure[] = [];
  private tsCounter = 1_700_000_000_000;
  private envelopeCounter = 0;
  private readonly server: Server;
  private readonly socketServer: WebSocketServer;
  private port = 0;
  readonly files = new Map<string, Buffer>();
  /** Files shared in channels (files.completeUploadExternal), in order. */
  readonly shared: SlackSharedFile[] = [];
  /** Uploads announced by files.getUploadURLExternal: file id → name, length and the bytes once POSTed. */
  readonly uploads = new Map<string, { filename: string; length: number; content?: Buffer }>();
  /** Answered POSTs to upload URLs, failed ones included (`failNext("upload", …)` scripts one). */
  uploadAttempts = 0;
  private fileCounter = 0;
  /** Display names users.info knows (user id → name); others answer user_not_found. */
  readonly userNames = new Map<string, string>([["U0ALICE", "Alice"]]);

  constructor() {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error) =>
        sendJson(response, 500, { ok: false, error: String(error) }),
      );
    });
    // Pongs are answered by hand, so that a stalled server can leave them unanswered.
    this.socketServer = new WebSocketServer({ noServer: true, autoPong: false });
    this.server.on("upgrade", (request, socket, head) => {
      if (this.dropping) {
        socket.destroy();
        return;
      }
      if (this.stalled) {
        this.held.push({ request, socket, head });
        return;
      }
      this.socketServer.handleUpgrade(request, socket, head, (ws) => this.onConnection(ws));
    });
  }

  async start(): Promise<this> {
    this.port = await listen(this.server);
    return this;
  }

  /** Value for `channels.slack.apiUrl`. */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api/`;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.terminate();
    for (const { socket } of this.held.splice(0)) socket.destroy();
    this.socketServer.close();
    await closeServer(this.server);
  }

  setDropping(dropping: boolean): void {
    this.dropping = dropping;
    if (dropping) for (const socket of this.sockets) socket.terminate();
  }

  /** The socket stops answering: no pong, no ping, a new connection's upgrade is not answered. The API still is. */
  stallReceives(): void {
    this.stalled = true;
  }

  /** The socket answers again: upgrades that waited are completed. */
  resumeReceives(): void {
    this.stalled = false;
    for (const { request, socket, head } of this.held.splice(0)) {
      if (socket.destroyed) continue;
      this.socketServer.handleUpgrade(request, socket, head, (ws) => this.onConnection(ws));
    }
  }

  get socketConnected(): boolean {
    return this.sockets.size > 0;
  }

  failNext(method: string, status: number, error: string, retryAfterSeconds?: number): void {
    this.failures.push({ method, status, error, retryAfterSeconds });
  }

  callsOf(method: string): SlackCall[] {
    return this.calls.filter((call) => call.method === method && !call.failed);
  }

  nextTs(): string {
    this.tsCounter += 1;
    return `${Math.floor(this.tsCounter / 1000)}.${String(this.tsCounter % 1000).padStart(6, "0")}`;
  }

  /** Sends an envelope over every socket; resolves with its envelope id. */
  sendEnvelope(type: "events_api" | "interactive", payload: Record<string, unknown>): string {
    const envelopeId = `env-${++this.envelopeCounter}`;
    const frame = JSON.stringify({
      envelope_id: envelopeId,
      type,
      accepts_response_payload: type === "interactive",
      payload,
    });
    for (const socket of this.sockets) socket.send(frame);
    return envelopeId;
  }

  /** An Events API `event_callback` body around `event`. */
  eventCallback(event: Record<string, unknown>): Record<string, unknown> {
    return {
      token: "legacy",
      team_id: SLACK_TEAM,
      api_app_id: "A0APP",
      type: "event_callback",
      event_id: `Ev${++this.envelopeCounter}`,
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [{ team_id: SLACK_TEAM, user_id: SLACK_BOT_USER, is_bot: true }],
      event,
    };
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.dropping) {
      request.socket.destroy();
      return;
    }
    const url = (request.url ?? "").split("?")[0]!;
    const upload = /^\/upload\/(\w+)$/.exec(url);
    if (upload && request.method === "POST") return this.receiveUpload(upload[1]!, request, response);
    const file = /^\/files\/(.+)$/.exec(url);
    if (file) {
      const content = this.files.get(file[1]!);
      if (!content || request.headers.authorization !== `Bearer ${this.botToken}`)
        return sendJson(response, 404, {});
      response.writeHead(200, { "content-type": "application/octet-stream" });
      response.end(content);
      return;
    }
    const match = /^\/api\/([\w.]+)$/.exec(url);
    if (!match) return sendJson(response, 404, { ok: false, error: "unknown_method" });
    const method = match[1]!;
    const raw = await readBody(request);
    const body = parseBody(raw, request.headers["content-type"] ?? "");
    const token = (request.headers.authorization ?? "").replace(/^Bearer /, "") || String(body.token ?? "");
    const call: SlackCall = { method, token, body };
    const expected = method === "apps.connections.open" ? this.appToken : this.botToken;
    if (token !== expected) {
      this.calls.push({ ...call, failed: true });
      return sendJson(response, 200, { ok: false, error: "invalid_auth" });
    }
    const failureIndex = this.failures.findIndex((failure) => failure.method === method);
    if (failureIndex >= 0) {
      const [failure] = this.failures.splice(failureIndex, 1);
      this.calls.push({ ...call, failed: true });
      const headers: Record<string, string> =
        failure!.retryAfterSeconds !== undefined ? { "retry-after": String(failure!.retryAfterSeconds) } : {};
      return sendJson(response, failure!.status, { ok: false, error: failure!.error }, headers);
    }
    this.calls.push(call);
    switch (method) {
      case "auth.test":
        return sendJson(response, 200, {
          ok: true,
          url: "https://fake.slack.com/",
          team: "Fake",
          user: "magpie",
          team_id: SLACK_TEAM,
          user_id: SLACK_BOT_USER,
          bot_id: "B0BOT",
        });
      case "apps.connections.open":
        return sendJson(response, 200, {
          ok: true,
          url: `ws://127.0.0.1:${this.port}/link/?ticket=t${this.connections + 1}`,
        });
      case "chat.postMessage": {
        const ts = this.nextTs();
        return sendJson(response, 200, {
          ok: true,
          channel: body.channel,
          ts,
          message: { type: "message", text: body.text, ts, user: SLACK_BOT_USER },
        });
      }
      case "users.info": {
        const name = this.userNames.get(String(body.user));
        if (!name) return sendJson(response, 200, { ok: false, error: "user_not_found" });
        return sendJson(response, 200, {
          ok: true,
          user: { id: body.user, name: name.toLowerCase(), profile: { display_name: name, real_name: name } },
        });
      }
      case "files.getUploadURLExternal": {
        const fileId = `F0FILE${++this.fileCounter}`;
        this.uploads.set(fileId, { filename: String(body.filename), length: Number(body.length) });
        return sendJson(response, 200, {
          ok: true,
          upload_url: `${this.baseUrl}/upload/${fileId}`,
          file_id: fileId,
        });
      }
      case "files.completeUploadExternal":
        return this.completeUpload(body, response);
      case "chat.update":
        return sendJson(response, 200, { ok: true, channel: body.channel, ts: body.ts, text: body.text });
      default:
        return sendJson(response, 200, { ok: false, error: "unknown_method" });
    }
  }

  /** The upload URL: takes the bytes once (as Slack's does), with the bot token. */
  private async receiveUpload(
    fileId: string,
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<void> {
    const content = await readBytes(request);
    this.uploadAttempts++;
    const failureIndex = this.failures.findIndex((failure) => failure.method === "upload");
    if (failureIndex >= 0) {
      const [failure] = this.failures.splice(failureIndex, 1);
      const headers: Record<string, string> =
        failure!.retryAfterSeconds !== undefined ? { "retry-after": String(failure!.retryAfterSeconds) } : {};
      response.writeHead(failure!.status, { "content-type": "text/plain", ...headers });
      response.end(failure!.error);
      return;
    }
    const pending = this.uploads.get(fileId);
    if (!pending || pending.content || request.headers.authorization !== `Bearer ${this.botToken}`) {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    pending.content = content;
    response.writeHead(200, { "content-type": "text/plain" }).end(`OK - ${content.length}`);
  }

  /** Shares uploaded files in `channel_id`; a file never uploaded (or uploaded short) is refused. */
  private completeUpload(body: Record<string, unknown>, response: ServerResponse): void {
    const entries = (Array.isArray(body.files) ? body.files : []) as Array<{ id: string; title?: string }>;
    const ready = entries.map((entry) => ({ entry, upload: this.uploads.get(entry.id) }));
    if (
      entries.length === 0 ||
      ready.some(({ upload }) => !upload?.content || upload.content.length !== upload.length)
    ) {
      sendJson(response, 200, { ok: false, error: "file_upload_not_completed" });
      return;
    }
    for (const { entry, upload } of ready) {
      this.shared.push({
        fileId: entry.id,
        filename: upload!.filename,
        title: entry.title,
        channel: String(body.channel_id),
        ...(body.thread_ts ? { threadTs: String(body.thread_ts) } : {}),
        ...(body.initial_comment ? { initialComment: String(body.initial_comment) } : {}),
        content: upload!.content!,
      });
      this.uploads.delete(entry.id);
    }
    sendJson(response, 200, {
      ok: true,
      files: entries.map((entry) => ({ id: entry.id, title: entry.title ?? "" })),
    });
  }

  private onConnection(ws: WebSocket): void {
    this.connections++;
    this.sockets.add(ws);
    ws.on("ping", (data) => {
      if (!this.stalled) ws.pong(data);
    });
    if (this.pingEveryMs > 0) {
      const pinger = setInterval(() => {
        if (!this.stalled) ws.ping();
      }, this.pingEveryMs);
      ws.on("close", () => clearInterval(pinger));
    }
    ws.on("close", () => this.sockets.delete(ws));
    ws.on("message", (frame) => {
      if (this.stalled) return;
      const message = JSON.parse(String(frame)) as { envelope_id?: string };
      if (message.envelope_id) this.acks.push(message.envelope_id);
    });
    ws.send(
      JSON.stringify({
        type: "hello",
        num_connections: 1,
        connection_info: { app_id: "A0APP" },
        debug_info: { host: "fake", approximate_connection_time: 18060 },
      }),
    );
  }
}

function parseBody(raw: string, contentType: string): Record<string, unknown> {
  if (!raw) return {};
  if (contentType.includes("json")) return JSON.parse(raw) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    out[key] =
      (key === "blocks" || key === "attachments" || key === "files") && value.startsWith("[")
        ? JSON.parse(value)
        : value;
  }
  return out;
}

/** Headers for a Slack-signed request: `v0=` HMAC-SHA256 of `v0:<ts>:<body>` (api.slack.com/authentication/verifying-requests-from-slack). */
export function slackSignature(
  secret: string,
  body: string,
  timestampSeconds = Math.floor(Date.now() / 1000),
): Record<string, string> {
  const signature = createHmac("sha256", secret).update(`v0:${timestampSeconds}:${body}`).digest("hex");
  return {
    "content-type": "application/json",
    "x-slack-request-timestamp": String(timestampSeconds),
    "x-slack-signature": `v0=${signature}`,
  };
}
