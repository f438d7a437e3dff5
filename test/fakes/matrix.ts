import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeServer, listen, sendJson } from "./http-util.js";

/**
 * A Matrix homeserver's Client-Server API on 127.0.0.1, login-less (the bot comes with an access token), that
 * the real matrix-js-sdk client talks to (`homeserverUrl`). It keeps a timeline of room events handed out by
 * `/sync` with `since` tokens (long-polled), answers whoami, send (idempotent per transaction id), redact,
 * room state (m.room.encryption), joined members (DM detection), invites and joins, typing and media upload
 * and download, records every request, and can fail one call (429 M_LIMIT_EXCEEDED, 403), reject the token
 * or drop connections.
 */

export const MATRIX_BOT = "@magpie:fake.test";

export interface MatrixEvent {
  event_id: string;
  room_id: string;
  sender: string;
  type: string;
  content: Record<string, unknown>;
  origin_server_ts: number;
  state_key?: string;
}

export interface MatrixCall {
  method: string;
  /** Path after the API prefix, e.g. `/rooms/!a:fake.test/send/m.room.message/txn1`. */
  path: string;
  body: Record<string, unknown>;
  failed?: boolean;
}

interface Room {
  members: string[];
  encrypted: boolean;
  invitedBot: boolean;
  /** The invite as the bot sees it: a DM (`is_direct`) or not, and the timeline position it happened at. */
  invite?: { direct: boolean; at: number };
}

interface ScriptedFailure {
  /** Matches the request's `METHOD path`. */
  pattern: RegExp;
  status: number;
  errcode: string;
  retryAfterMs?: number;
}

export class FakeMatrix {
  readonly calls: MatrixCall[] = [];
  /** Every event in every room, in order; a sync token is an index into it. */
  readonly timeline: MatrixEvent[] = [];
  readonly rooms = new Map<string, Room>();
  readonly uploads = new Map<string, { type: string; bytes: Buffer }>();
  validToken = "syt_fake_token";
  holdMs = 150;
  /** While true, every request's socket is destroyed without an answer (network loss). */
  dropping = false;
  /**
   * While true, /sync is never answered and its socket stays open (a long poll that hangs: the client thinks it
   * is connected and receives nothing); other requests still answer. `resumeReceives()` ends it.
   */
  stalled = false;
  private stalledSyncs: Array<() => void> = [];
  typingCount = 0;
  private failures: ScriptedFailure[] = [];
  private waiters: Array<() => void> = [];
  private readonly transactions = new Map<string, string>();
  private nextEvent = 1;
  private readonly server: Server;
  private port = 0;

  constructor() {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error) => {
        sendJson(response, 500, { errcode: "M_UNKNOWN", error: String(error) });
      });
    });
  }

  async start(): Promise<this> {
    this.port = await listen(this.server);
    return this;
  }

  get homeserverUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    for (const wake of this.waiters.splice(0)) wake();
    await closeServer(this.server);
  }

  /** Creates a room the bot has joined; `members` are the other users in it. */
  addRoom(roomId: string, members: string[], options: { encrypted?: boolean } = {}): void {
    this.rooms.set(roomId, {
      members: [MATRIX_BOT, ...members],
      encrypted: options.encrypted ?? false,
      invitedBot: false,
    });
  }

  /**
   * Invites the bot to a new room: it shows up under `rooms.invite` in the next sync (and in a first sync) until
   * the bot joins, as a homeserver does — not again in every later sync.
   */
  invite(roomId: string, from: string, options: { encrypted?: boolean; direct?: boolean } = {}): void {
    const direct = options.direct ?? true;
    this.rooms.set(roomId, {
      members: [from],
      encrypted: options.encrypted ?? false,
      invitedBot: true,
      invite: { direct, at: this.timeline.length },
    });
    // The invite moves the sync token on, as on a real server.
    this.push(roomId, from, "m.room.member", { membership: "invite", is_direct: direct }, MATRIX_BOT);
  }

  /** Appends an event to a room's timeline and wakes a waiting /sync; returns its event id. */
  push(
    roomId: string,
    sender: string,
    type: string,
    content: Record<string, unknown>,
    stateKey?: string,
  ): string {
    const event: MatrixEvent = {
      event_id: `$ev${this.nextEvent++}`,
      room_id: roomId,
      sender,
      type,
      content,
      origin_server_ts: Date.now(),
      ...(stateKey !== undefined ? { state_key: stateKey } : {}),
    };
    this.timeline.push(event);
    this.wake();
    return event.event_id;
  }

  /** A text message from `sender`, optionally with extra content (mentions, a reply relation). */
  pushText(roomId: string, sender: string, body: string, extra: Record<string, unknown> = {}): string {
    return this.push(roomId, sender, "m.room.message", { msgtype: "m.text", body, ...extra });
  }

  /** Fails the next request matching `pattern` (`METHOD /path`) with `status` and `errcode`. */
  failNext(pattern: RegExp, status: number, errcode: string, retryAfterMs?: number): void {
    this.failures.push({ pattern, status, errcode, retryAfterMs });
  }

  /** Events the bot sent (send API), in order, failed ones excluded. */
  sentEvents(type?: string): MatrixEvent[] {
    return this.timeline.filter((event) => event.sender === MATRIX_BOT && (!type || event.type === type));
  }

  /** /sync hangs from now on (see `stalled`). */
  stallReceives(): void {
    this.stalled = true;
  }

  /** /sync is answered again; one still held from the stall is answered now. */
  resumeReceives(): void {
    this.stalled = false;
    for (const answer of this.stalledSyncs.splice(0)) answer();
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.dropping) {
      request.socket.destroy();
      return;
    }
    const url = new URL(request.url ?? "/", this.homeserverUrl);
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const method = request.method ?? "GET";
    const pathname = decodeURIComponent(url.pathname);
    if (/^\/_matrix\/(?:media|client\/v1\/media)\//.test(pathname))
      return this.media(method, pathname, request, raw, response);
    const route = pathname.replace(/^\/_matrix\/client\/(?:v3|r0|v1)/, "");
    if (route === "/versions" || pathname === "/_matrix/client/versions") {
      sendJson(response, 200, { versions: ["v1.1", "v1.11"] });
      return;
    }
    const body = isJson(request) && raw.length ? (JSON.parse(raw.toString()) as Record<string, unknown>) : {};
    const call: MatrixCall = { method, path: route, body };
    this.calls.push(call);
    if (bearer(request, url) !== this.validToken) {
      sendJson(response, 401, { errcode: "M_UNKNOWN_TOKEN", error: "Invalid access token passed." });
      return;
    }
    const failureIndex = this.failures.findIndex((failure) => failure.pattern.test(`${method} ${route}`));
    if (failureIndex >= 0) {
      const [failure] = this.failures.splice(failureIndex, 1);
      call.failed = true;
      sendJson(response, failure!.status, {
        errcode: failure!.errcode,
        error: "scripted failure",
        ...(failure!.retryAfterMs ? { retry_after_ms: failure!.retryAfterMs } : {}),
      });
      return;
    }
    await this.route(method, route, url, body, response);
  }

  private async route(
    method: string,
    route: string,
    url: URL,
    body: Record<string, unknown>,
    response: ServerResponse,
  ): Promise<void> {
    if (route === "/account/whoami") return sendJson(response, 200, { user_id: MATRIX_BOT });
    if (route === "/sync") return this.sync(url, response);
    let match = /^\/rooms\/([^/]+)\/send\/([^/]+)\/([^/]+)$/.exec(route);
    if (match && method === "PUT") {
      const [, roomId, type, txnId] = match;
      const key = `${roomId}|${txnId}`;
      const known = this.transactions.get(key);
      const eventId = known ?? this.push(roomId!, MATRIX_BOT, type!, body);
      this.transactions.set(key, eventId);
      return sendJson(response, 200, { event_id: eventId });
    }
    match = /^\/rooms\/([^/]+)\/redact\/([^/]+)\/([^/]+)$/.exec(route);
    if (match && method === "PUT") {
      const eventId = this.push(match[1]!, MATRIX_BOT, "m.room.redaction", { redacts: match[2], ...body });
      return sendJson(response, 200, { event_id: eventId });
    }
    match = /^\/rooms\/([^/]+)\/state\/m\.room\.encryption\/?$/.exec(route);
    if (match) {
      const room = this.rooms.get(match[1]!);
      return room?.encrypted
        ? sendJson(response, 200, { algorithm: "m.megolm.v1.aes-sha2" })
        : sendJson(response, 404, { errcode: "M_NOT_FOUND", error: "Event not found." });
    }
    match = /^\/rooms\/([^/]+)\/joined_members$/.exec(route);
    if (match) {
      const room = this.rooms.get(match[1]!);
      if (!room) return sendJson(response, 403, { errcode: "M_FORBIDDEN", error: "not in room" });
      return sendJson(response, 200, {
        joined: Object.fromEntries(room.members.map((member) => [member, { display_name: member }])),
      });
    }
    match = /^\/rooms\/([^/]+)\/event\/([^/]+)$/.exec(route);
    if (match) {
      const event = this.timeline.find((entry) => entry.event_id === match![2]);
      return event
        ? sendJson(response, 200, event)
        : sendJson(response, 404, { errcode: "M_NOT_FOUND", error: "Event not found." });
    }
    match = /^\/rooms\/([^/]+)\/typing\/([^/]+)$/.exec(route);
    if (match && method === "PUT") {
      if (body.typing) this.typingCount++;
      return sendJson(response, 200, {});
    }
    match = /^\/(?:join|rooms)\/([^/]+)(?:\/join)?$/.exec(route);
    if (match && method === "POST") {
      const room = this.rooms.get(match[1]!);
      if (room) {
        room.invitedBot = false;
        if (!room.members.includes(MATRIX_BOT)) room.members.push(MATRIX_BOT);
      }
      return sendJson(response, 200, { room_id: match[1] });
    }
    sendJson(response, 404, { errcode: "M_UNRECOGNIZED", error: `no route ${method} ${route}` });
  }

  /** Long poll: events after `since` (an index into the timeline) for joined rooms, plus pending invites. */
  private async sync(url: URL, response: ServerResponse): Promise<void> {
    if (this.stalled) await new Promise<void>((resolve) => this.stalledSyncs.push(resolve));
    const since = Number(url.searchParams.get("since") ?? "NaN");
    const timeout = Math.min(Number(url.searchParams.get("timeout") ?? 0), this.holdMs);
    const invites = (): Record<string, unknown> =>
      Object.fromEntries(
        [...this.rooms.entries()]
          .filter(([, room]) => room.invitedBot && (Number.isNaN(since) || (room.invite?.at ?? 0) >= since))
          .map(([roomId, room]) => [
            roomId,
            {
              invite_state: {
                events: [
                  ...(room.encrypted
                    ? [
                        {
                          type: "m.room.encryption",
                          state_key: "",
                          sender: room.members[0],
                          content: { algorithm: "m.megolm.v1.aes-sha2" },
                        },
                      ]
                    : []),
                  {
                    type: "m.room.member",
                    state_key: MATRIX_BOT,
                    sender: room.members[0],
                    content: { membership: "invite", is_direct: room.invite?.direct ?? true },
                  },
                ],
              },
            },
          ]),
      );
    const fresh = () => (Number.isNaN(since) ? [] : this.timeline.slice(since));
    if (!Number.isNaN(since) && fresh().length === 0 && Object.keys(invites()).length === 0 && timeout > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeout);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    // A first sync (no since) returns the recent history of each room, as a real server does.
    const events = Number.isNaN(since) ? this.timeline.slice(-20) : fresh();
    const join: Record<string, { timeline: { events: MatrixEvent[] } }> = {};
    for (const event of events) {
      const room = this.rooms.get(event.room_id);
      if (!room || room.invitedBot) continue;
      join[event.room_id] ??= { timeline: { events: [] } };
      join[event.room_id]!.timeline.events.push(event);
    }
    if (response.destroyed) return;
    sendJson(response, 200, {
      next_batch: String(this.timeline.length),
      rooms: { join, invite: invites() },
    });
  }

  private media(
    method: string,
    pathname: string,
    request: IncomingMessage,
    raw: Buffer,
    response: ServerResponse,
  ): void {
    const url = new URL(request.url ?? "/", this.homeserverUrl);
    if (bearer(request, url) !== this.validToken) {
      sendJson(response, 401, { errcode: "M_UNKNOWN_TOKEN", error: "Invalid access token passed." });
      return;
    }
    if (method === "POST" && /\/upload$/.test(pathname)) {
      const id = `media${this.uploads.size + 1}`;
      this.uploads.set(id, { type: String(request.headers["content-type"] ?? ""), bytes: raw });
      this.calls.push({ method, path: "/upload", body: { name: url.searchParams.get("filename") } });
      sendJson(response, 200, { content_uri: `mxc://fake.test/${id}` });
      return;
    }
    const download = /\/download\/fake\.test\/([^/]+)/.exec(pathname);
    const file = download ? this.uploads.get(download[1]!) : undefined;
    if (!file) {
      sendJson(response, 404, { errcode: "M_NOT_FOUND", error: "no media" });
      return;
    }
    response.writeHead(200, { "content-type": file.type });
    response.end(file.bytes);
  }
}

function bearer(request: IncomingMessage, url: URL): string | null {
  const header = request.headers.authorization;
  if (header?.startsWith("Bearer ")) return header.slice(7);
  return url.searchParams.get("access_token");
}

function isJson(request: IncomingMessage): boolean {
  return String(request.headers["content-type"] ?? "").includes("json");
}
