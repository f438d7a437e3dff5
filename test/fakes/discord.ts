import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type WebSocket, WebSocketServer } from "ws";
import { closeServer, listen, sendJson } from "./http-util.js";
import { parseMultipart, readBytes, type UploadedFile } from "./multipart.js";

/**
 * Discord REST (`/api/v10/...`) and gateway WebSocket on one 127.0.0.1 port, driven by the real discord.js
 * client (`rest.api`; the gateway URL comes from `GET /gateway/bot`). It speaks HELLO / IDENTIFY / READY /
 * GUILD_CREATE / heartbeat ACK / RESUME, dispatches MESSAGE_CREATE and button INTERACTION_CREATE, records
 * every REST call, and can fail a call once (429 + retry_after), reject the token (401 on REST, or close
 * 4004 on IDENTIFY), drop every connection (network loss) and stall the gateway (`stallReceives`: sockets stay
 * open, heartbeats go unacknowledged, a new connection gets no HELLO — a gateway that stopped answering).
 */

export interface DiscordCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
  failed?: boolean;
  /** Files of a multipart call (`files[0]`, …), by part name. */
  uploads?: Record<string, UploadedFile>;
}

export const DISCORD_BOT = {
  id: "900000000000000001",
  username: "magpie",
  discriminator: "0",
  bot: true,
  global_name: null,
  avatar: null,
};
export const DISCORD_USER = {
  id: "100000000000000001",
  username: "alice",
  discriminator: "0",
  global_name: "Alice",
  avatar: null,
};
export const DISCORD_GUILD_ID = "200000000000000001";
export const DISCORD_CHANNEL_ID = "300000000000000001";
export const DISCORD_THREAD_ID = "300000000000000009";
export const DISCORD_DM_CHANNEL_ID = "400000000000000001";

interface ScriptedFailure {
  method: string;
  pathPattern: RegExp;
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

export class FakeDiscord {
  readonly calls: DiscordCall[] = [];
  validToken = "FAKE.DISCORD.TOKEN";
  /** When true, REST accepts any token and a wrong one is only refused by the gateway (close 4004). */
  restAcceptsAnyToken = false;
  dropping = false;
  identifies = 0;
  resumes = 0;
  /** Gateway connections opened so far. */
  connections = 0;
  /** HELLO's `heartbeat_interval` (Discord's own is about 41 s): a test of inbound liveness shortens it. */
  heartbeatIntervalMs = 30_000;
  /** While stalled, gateway frames are dropped unanswered and new connections wait for their HELLO. */
  private stalled = false;
  private held: WebSocket[] = [];
  private sockets = new Set<WebSocket>();
  private sequence = 0;
  private snowflake = 500000000000000000n;
  private failures: ScriptedFailure[] = [];
  private readonly server: Server;
  private readonly gateway: WebSocketServer;
  private port = 0;
  readonly cdnFiles = new Map<string, Buffer>();

  constructor() {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error) =>
        sendJson(response, 500, { message: String(error), code: 0 }),
      );
    });
    this.gateway = new WebSocketServer({ noServer: true });
    this.server.on("upgrade", (request, socket, head) => {
      if (this.dropping) {
        socket.destroy();
        return;
      }
      this.gateway.handleUpgrade(request, socket, head, (ws) => this.onConnection(ws));
    });
  }

  async start(): Promise<this> {
    this.port = await listen(this.server);
    return this;
  }

  get apiBase(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.terminate();
    this.gateway.close();
    await closeServer(this.server);
  }

  /** Network loss: terminate every gateway socket and refuse new connections until `setDropping(false)`. */
  setDropping(dropping: boolean): void {
    this.dropping = dropping;
    if (dropping) for (const socket of this.sockets) socket.terminate();
  }

  /** The gateway stops answering: no heartbeat ACK, no reply to IDENTIFY/RESUME, no HELLO on a new connection. */
  stallReceives(): void {
    this.stalled = true;
  }

  /** The gateway answers again: connections that waited get their HELLO. */
  resumeReceives(): void {
    this.stalled = false;
    for (const ws of this.held.splice(0)) if (ws.readyState === ws.OPEN) this.hello(ws);
  }

  failNext(
    method: string,
    pathPattern: RegExp,
    status: number,
    body: Record<string, unknown>,
    headers: Record<string, string> = {},
  ): void {
    this.failures.push({ method, pathPattern, status, body, headers });
  }

  nextId(): string {
    this.snowflake += 1n;
    return this.snowflake.toString();
  }

  callsOf(method: string, pathPattern: RegExp): DiscordCall[] {
    return this.calls.filter((call) => call.method === method && pathPattern.test(call.path) && !call.failed);
  }

  /** Dispatches a gateway event to every connected client. */
  dispatch(type: string, data: unknown): void {
    const frame = JSON.stringify({ op: 0, t: type, s: ++this.sequence, d: data });
    for (const socket of this.sockets) socket.send(frame);
  }

  /** Dispatches MESSAGE_CREATE; `guild: false` makes it a DM. Returns the message id. */
  sendMessage(fields: {
    content: string;
    guild?: boolean;
    author?: typeof DISCORD_USER | (typeof DISCORD_USER & { bot: true });
    channelId?: string;
    mentions?: unknown[];
    referenced?: Record<string, unknown>;
    attachments?: unknown[];
  }): string {
    const id = this.nextId();
    const guild = fields.guild ?? false;
    const author = fields.author ?? DISCORD_USER;
    this.dispatch("MESSAGE_CREATE", {
      id,
      channel_id: fields.channelId ?? (guild ? DISCORD_CHANNEL_ID : DISCORD_DM_CHANNEL_ID),
      ...(guild
        ? {
            guild_id: DISCORD_GUILD_ID,
            member: { roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 },
          }
        : { channel_type: 1 }),
      author,
      content: fields.content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: fields.mentions ?? [],
      mention_roles: [],
      attachments: fields.attachments ?? [],
      embeds: [],
      pinned: false,
      type: fields.referenced ? 19 : 0,
      ...(fields.referenced
        ? {
            message_reference: { message_id: fields.referenced.id, channel_id: fields.referenced.channel_id },
            referenced_message: fields.referenced,
          }
        : {}),
    });
    return id;
  }

  /** Dispatches a button press (INTERACTION_CREATE, component type 2) on `messageId`. */
  pressButton(customId: string, messageId: string, channelId = DISCORD_DM_CHANNEL_ID, guild = false): void {
    this.dispatch("INTERACTION_CREATE", {
      id: this.nextId(),
      application_id: DISCORD_BOT.id,
      type: 3,
      token: "interaction-token",
      version: 1,
      channel_id: channelId,
      channel: { id: channelId, type: guild ? 0 : 1 },
      ...(guild
        ? {
            guild_id: DISCORD_GUILD_ID,
            member: {
              user: DISCORD_USER,
              roles: [],
              joined_at: new Date().toISOString(),
              permissions: "0",
              deaf: false,
              mute: false,
              flags: 0,
            },
          }
        : { user: DISCORD_USER }),
      data: { custom_id: customId, component_type: 2 },
      message: this.messageObject(messageId, channelId, "", []),
      app_permissions: "0",
      locale: "en-US",
      entitlements: [],
      authorizing_integration_owners: {},
      attachment_size_limit: 0,
    });
  }

  private messageObject(
    id: string,
    channelId: string,
    content: string,
    components: unknown,
  ): Record<string, unknown> {
    return {
      id,
      channel_id: channelId,
      author: DISCORD_BOT,
      content,
      components,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      type: 0,
    };
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.dropping) {
      request.socket.destroy();
      return;
    }
    const method = request.method ?? "GET";
    const path = (request.url ?? "").split("?")[0]!;
    const cdn = /^\/cdn\/(.+)$/.exec(path);
    if (cdn) {
      const file = this.cdnFiles.get(cdn[1]!);
      if (!file) return sendJson(response, 404, { message: "404: Not Found", code: 0 });
      response.writeHead(200, { "content-type": "application/octet-stream" });
      response.end(file);
      return;
    }
    const raw = await readBytes(request);
    const contentType = request.headers["content-type"] ?? "";
    // With files, discord.js sends multipart: the message as `payload_json`, the files as `files[n]`.
    const multipart = parseMultipart(raw, contentType);
    const body = multipart
      ? (JSON.parse(multipart.fields.payload_json ?? "{}") as Record<string, unknown>)
      : raw.length > 0 && contentType.includes("json")
        ? (JSON.parse(raw.toString("utf8")) as Record<string, unknown>)
        : {};
    const call: DiscordCall = {
      method,
      path: path.replace(/^\/api\/v10/, ""),
      body,
      ...(multipart ? { uploads: multipart.files } : {}),
    };
    const authorized =
      request.headers.authorization === `Bot ${this.validToken}` ||
      (this.restAcceptsAnyToken && !!request.headers.authorization);
    const isInteractionCallback = call.path.startsWith("/interactions/");
    if (!authorized && !isInteractionCallback) {
      this.calls.push({ ...call, failed: true });
      return sendJson(response, 401, { message: "401: Unauthorized", code: 0 });
    }
    const failureIndex = this.failures.findIndex(
      (failure) => failure.method === method && failure.pathPattern.test(call.path),
    );
    if (failureIndex >= 0) {
      const [failure] = this.failures.splice(failureIndex, 1);
      this.calls.push({ ...call, failed: true });
      return sendJson(response, failure!.status, failure!.body, failure!.headers);
    }
    this.calls.push(call);
    if (method === "GET" && call.path === "/gateway/bot") {
      return sendJson(response, 200, {
        url: `ws://127.0.0.1:${this.port}`,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: 1 },
      });
    }
    let match = /^\/channels\/(\d+)\/messages$/.exec(call.path);
    if (method === "POST" && match) {
      const message = this.messageObject(
        this.nextId(),
        match[1]!,
        String(body.content ?? ""),
        body.components ?? [],
      );
      const attachments = Object.values(call.uploads ?? {}).map((file) => ({
        id: this.nextId(),
        filename: file.filename,
        size: file.content.length,
        url: `http://127.0.0.1:${this.port}/cdn/${file.filename}`,
        proxy_url: `http://127.0.0.1:${this.port}/cdn/${file.filename}`,
        ...(file.contentType ? { content_type: file.contentType } : {}),
      }));
      return sendJson(response, 200, { ...message, attachments });
    }
    match = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(call.path);
    if (method === "PATCH" && match) {
      return sendJson(
        response,
        200,
        this.messageObject(match[2]!, match[1]!, String(body.content ?? ""), body.components ?? []),
      );
    }
    if (method === "POST" && /^\/channels\/\d+\/typing$/.test(call.path)) {
      response.writeHead(204).end();
      return;
    }
    if (method === "POST" && isInteractionCallback) {
      response.writeHead(204).end();
      return;
    }
    sendJson(response, 404, { message: "404: Not Found", code: 0 });
  }

  private onConnection(ws: WebSocket): void {
    this.connections++;
    this.sockets.add(ws);
    ws.on("close", () => this.sockets.delete(ws));
    if (this.stalled) this.held.push(ws);
    else this.hello(ws);
  }

  private hello(ws: WebSocket): void {
    ws.send(JSON.stringify({ op: 10, d: { heartbeat_interval: this.heartbeatIntervalMs } }));
    ws.on("message", (frame) => {
      if (this.stalled) return;
      const payload = JSON.parse(String(frame)) as {
        op: number;
        d: { token?: string; seq?: number; session_id?: string };
      };
      if (payload.op === 1) ws.send(JSON.stringify({ op: 11 }));
      if (payload.op === 2) {
        if (payload.d.token !== this.validToken) {
          ws.close(4004, "Authentication failed.");
          return;
        }
        this.identifies++;
        this.sendReady(ws);
      }
      if (payload.op === 6) {
        this.resumes++;
        ws.send(JSON.stringify({ op: 0, t: "RESUMED", s: ++this.sequence, d: {} }));
      }
    });
  }

  private sendReady(ws: WebSocket): void {
    const frame = (type: string, data: unknown) =>
      ws.send(JSON.stringify({ op: 0, t: type, s: ++this.sequence, d: data }));
    frame("READY", {
      v: 10,
      user: DISCORD_BOT,
      guilds: [{ id: DISCORD_GUILD_ID, unavailable: true }],
      session_id: "session-1",
      resume_gateway_url: `ws://127.0.0.1:${this.port}`,
      shard: [0, 1],
      application: { id: DISCORD_BOT.id, flags: 0 },
      private_channels: [],
    });
    frame("GUILD_CREATE", {
      id: DISCORD_GUILD_ID,
      name: "Ops",
      owner_id: DISCORD_USER.id,
      unavailable: false,
      member_count: 2,
      features: [],
      emojis: [],
      stickers: [],
      roles: [
        {
          id: DISCORD_GUILD_ID,
          name: "@everyone",
          permissions: "1024",
          position: 0,
          color: 0,
          hoist: false,
          managed: false,
          mentionable: false,
        },
      ],
      channels: [
        { id: DISCORD_CHANNEL_ID, type: 0, name: "general", position: 0, permission_overwrites: [] },
      ],
      threads: [
        {
          id: DISCORD_THREAD_ID,
          type: 11,
          name: "incident",
          parent_id: DISCORD_CHANNEL_ID,
          guild_id: DISCORD_GUILD_ID,
          owner_id: DISCORD_USER.id,
          thread_metadata: {
            archived: false,
            auto_archive_duration: 1440,
            archive_timestamp: new Date().toISOString(),
            locked: false,
          },
          message_count: 0,
          member_count: 1,
        },
      ],
      members: [],
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      joined_at: new Date().toISOString(),
      large: false,
    });
  }
}
