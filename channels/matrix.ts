import { createClient, type MatrixClient, MatrixError, Method } from "matrix-js-sdk";
import type { Logger as SdkLogger } from "matrix-js-sdk/lib/logger.js";
import { z } from "zod";
import type {
  Attachment,
  AttachmentKind,
  Button,
  ChannelAdapter,
  ChannelCapabilities,
  ChannelStatus,
  InboundMessage,
  InboundSender,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
  SendProgress,
  SendResult,
} from "../src/core/types.js";
import { ChannelSendError, errorMessage, MagpieError } from "../src/lib/errors.js";
import { PlatformFiles } from "../src/security/platform-files.js";
import { backoffDelay } from "./backoff.js";
import type { ChannelDeps } from "./channel-deps.js";
import type { RenderedPart } from "./format/chunk.js";
import { renderParts } from "./format/chunk.js";
import { renderMarkdown } from "./format/markdown.js";
import { livenessLimit, receiveCycleSecs } from "./liveness.js";
import type { MatrixConfig } from "./matrix-entry.js";
import { MATRIX_SYNC_SECS } from "./matrix-entry.js";
import { type OutboundFile, readOutboundFile, sendParts } from "./send-parts.js";
import { StatusTracker } from "./status-tracker.js";

const TOKEN_HINT = "Check MATRIX_ACCESS_TOKEN or channels.matrix.accessToken.";
/**
 * Characters of one message. Matrix caps an event at 65,536 bytes and a message carries the text twice (body
 * and formatted_body), so parts stay well below that even in 4-byte characters with HTML escapes.
 */
const LIMIT = 6000;
/** Reactions standing in for buttons, in order. */
export const NUMBER_KEYS = ["1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣", "🔟"];
/** Message content key listing a message's buttons (reaction key, id, label), so any client can show them. */
const BUTTONS_KEY = "io.magpie.buttons";
const ENCRYPTION_NOTICE =
  "This room is end-to-end encrypted, and Magpie cannot read or send encrypted messages yet. Talk to it in a room without encryption.";
/** Reactions remembered for button presses (the newest). */
const MAX_BUTTON_MESSAGES = 500;

interface SyncEvent {
  event_id: string;
  sender: string;
  type: string;
  content: Record<string, unknown>;
  origin_server_ts?: number;
  state_key?: string;
}

/** A state event as an invite shows it (stripped: no id, no timestamp). */
interface StrippedEvent {
  sender?: string;
  type?: string;
  state_key?: string;
  content?: Record<string, unknown>;
}

interface SyncResponse {
  next_batch: string;
  rooms?: {
    join?: Record<string, { timeline?: { events?: SyncEvent[] } }>;
    invite?: Record<string, { invite_state?: { events?: StrippedEvent[] } }>;
  };
}

interface Relation {
  rel_type?: string;
  event_id?: string;
  key?: string;
  "m.in_reply_to"?: { event_id?: string };
}

/**
 * Matrix via matrix-js-sdk's HTTP client: its own `/sync` long poll (the `since` token kept in the store, so
 * a restart answers every new message once and no old one), rooms as chats (two members = direct), replies
 * and edits (`m.replace`) as relations, reactions 1️⃣… standing in for buttons. Unencrypted rooms only: an
 * encrypted room gets one notice and nothing else.
 */
export class MatrixChannel implements ChannelAdapter {
  readonly name = "matrix";
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: LIMIT,
    edit: true,
    buttons: true,
    typing: true,
    threads: false,
  };
  private readonly client: MatrixClient;
  private readonly config: MatrixConfig;
  private readonly status$ = new StatusTracker();
  private readonly files: PlatformFiles;
  /** `<event id>|<reaction key>` → button id, for the newest messages with buttons. */
  private readonly buttons = new Map<string, string>();
  /** Room id → whether it is a direct chat (two members), until its membership changes. */
  private readonly direct = new Map<string, boolean>();
  private sink: InboundSink | null = null;
  private userId = "";
  private stopped = false;
  private abort = new AbortController();
  private retryTimer: NodeJS.Timeout | null = null;
  private loop: Promise<void> | null = null;
  /** The /sync in flight: `reconnect` abandons it alone (the loop's `abort` is for stopping). */
  private cycle: AbortController | null = null;
  /** How long the homeserver may hold one /sync: fitted within the liveness limit. */
  private readonly syncMs: number;
  private txn = 0;

  constructor(private readonly deps: ChannelDeps) {
    this.config = deps.config.channels.matrix;
    this.syncMs =
      1000 * receiveCycleSecs(livenessLimit(this.config, MATRIX_SYNC_SECS + 15), MATRIX_SYNC_SECS);
    if (!this.config.accessToken || !this.config.homeserverUrl) {
      throw new MagpieError(
        "channel.matrix.no_token",
        "Matrix is enabled but has no homeserverUrl or access token. Set channels.matrix.homeserverUrl and MATRIX_ACCESS_TOKEN (or channels.matrix.accessToken).",
      );
    }
    this.client = createClient({
      baseUrl: this.config.homeserverUrl,
      accessToken: this.config.accessToken,
      userId: this.config.userId,
      useAuthorizationHeader: true,
      // The SDK logs every request at debug level to the console; Magpie's log gets its warnings only.
      logger: sdkLogger(deps.logger),
    });
    this.files = new PlatformFiles({
      platform: "Matrix",
      hosts: [],
      endpoint: this.config.homeserverUrl,
      headers: { authorization: `Bearer ${this.config.accessToken}` },
    });
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    await this.connect();
  }

  /** whoami (token check), then the sync loop; network trouble at start-up retries with back-off. */
  private async connect(attempt = 0): Promise<void> {
    try {
      const me = await this.client.whoami();
      this.userId = me.user_id;
    } catch (error) {
      if (error instanceof MatrixError && (error.httpStatus === 401 || error.httpStatus === 403)) {
        const message = `The Matrix homeserver rejected the access token (${error.httpStatus} ${error.errcode ?? ""}). ${TOKEN_HINT}`;
        this.status$.set("failed", message);
        throw new MagpieError("channel.matrix.unauthorized", message, { cause: error });
      }
      this.status$.set("reconnecting", `cannot reach the Matrix homeserver: ${errorMessage(error)}`);
      this.deps.logger.warn({ channel: this.name, err: errorMessage(error) }, "matrix unreachable, retrying");
      if (this.stopped) return;
      this.retryTimer = setTimeout(
        () => {
          this.connect(attempt + 1).catch((inner) => this.status$.set("failed", errorMessage(inner)));
        },
        backoffDelay(attempt, 500, 30_000),
      );
      return;
    }
    if (this.stopped) return;
    this.loop = this.syncLoop();
  }

  private get sinceKey(): string {
    return `matrix.since.${this.userId}`;
  }

  private async syncLoop(): Promise<void> {
    let failures = 0;
    let since = this.deps.store.kv.get(this.sinceKey, z.string());
    while (!this.stopped) {
      const cycle = new AbortController();
      this.cycle = cycle;
      try {
        const response = await this.client.http.authedRequest<SyncResponse>(
          Method.Get,
          "/sync",
          { timeout: String(since ? this.syncMs : 0), ...(since ? { since } : {}) },
          undefined,
          {
            abortSignal: AbortSignal.any([this.abort.signal, cycle.signal]),
            localTimeoutMs: this.syncMs + 15_000,
            priority: "auto",
          },
        );
        failures = 0;
        if (this.stopped) return;
        this.status$.received();
        // The very first sync only fixes the starting point: the history it returns was before Magpie.
        await this.handleSync(response, since === undefined);
        since = response.next_batch;
        // Stored after the batch reached the inbox: a crash in between hands the same events over again
        // and the inbox drops the duplicates.
        this.deps.store.kv.set(this.sinceKey, since);
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof MatrixError && error.httpStatus === 401) {
          this.status$.set("failed", `The Matrix homeserver rejected the access token (401). ${TOKEN_HINT}`);
          return;
        }
        // Abandoned by `reconnect` (the sync hung past the channel's limit): sync again at once.
        if (cycle.signal.aborted) continue;
        this.status$.set("reconnecting", `sync failed: ${errorMessage(error)}`);
        await this.sleep(backoffDelay(failures++, 500, 30_000));
      } finally {
        if (this.cycle === cycle) this.cycle = null;
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const signal = this.abort.signal;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
      signal.addEventListener("abort", done, { once: true });
    });
  }

  private async handleSync(response: SyncResponse, initial: boolean): Promise<void> {
    for (const [roomId, invite] of Object.entries(response.rooms?.invite ?? {})) {
      await this.handleInvite(roomId, invite.invite_state?.events ?? []);
    }
    for (const [roomId, room] of Object.entries(response.rooms?.join ?? {})) {
      for (const event of room.timeline?.events ?? []) {
        if (event.type === "m.room.member") this.direct.delete(roomId);
        if (initial || event.sender === this.userId) continue;
        await this.handleEvent(roomId, event).catch((error) =>
          this.deps.logger.error(
            { channel: this.name, err: errorMessage(error) },
            "matrix event handling failed",
          ),
        );
      }
    }
  }

  /**
   * Joins a room only when access control would let the inviter in: as an owner in a DM, in an allowed group,
   * or as a stranger asking for a DM where pairing is how strangers get in (joining is what lets the pairing code
   * reach them). Any other invite is left unanswered: a stranger can't pull the bot into rooms, encrypted or not.
   */
  private async handleInvite(roomId: string, state: StrippedEvent[]): Promise<void> {
    const own = state.find(
      (event) =>
        event.type === "m.room.member" &&
        event.state_key === this.userId &&
        event.content?.membership === "invite",
    );
    const inviter = typeof own?.sender === "string" ? own.sender : "";
    const sink = this.sink;
    if (!inviter || !sink) return;
    const sender = { channel: this.name, chatId: roomId, userId: inviter, userName: inviter };
    const asDirect = this.screen({ ...sender, isDirect: true });
    const asGroup = this.screen({ ...sender, isDirect: false });
    const direct = own?.content?.is_direct === true;
    if (asDirect !== "allowed" && asGroup !== "allowed" && !(direct && asDirect === "pairing")) {
      this.deps.logger.info({ channel: this.name, roomId }, "matrix invite left unanswered: access control");
      return;
    }
    // Joining is what lets a DM reach access control (pairing); it answers nothing by itself.
    await this.client
      .joinRoom(roomId)
      .catch((error) =>
        this.deps.logger.warn({ channel: this.name, err: errorMessage(error) }, "matrix join failed"),
      );
  }

  /** Access control's verdict on a sender before anything of the event is read (every sender, without a screen). */
  private screen(sender: InboundSender): "allowed" | "pairing" | "refused" {
    return this.sink?.screen?.(sender) ?? "allowed";
  }

  /**
   * One timeline event. Its sender is judged first, by the envelope (room, sender, DM or group): a sender access
   * control would not let in gets nothing of the event read — no encryption notice, no replied-to event fetched,
   * no body — and is handed on with an empty text, so access control answers (a pairing code or nothing).
   */
  private async handleEvent(roomId: string, event: SyncEvent): Promise<void> {
    const sink = this.sink!;
    const relation = event.content["m.relates_to"] as Relation | undefined;
    if (event.type === "m.reaction") {
      if (relation?.rel_type !== "m.annotation" || !relation.event_id || !relation.key) return;
      const buttonId = this.buttons.get(`${relation.event_id}|${relation.key}`);
      if (!buttonId) return;
      // Access control judges the press (Intake.buttonPressed → allowsPress).
      await sink.buttonPressed({
        channel: this.name,
        chatId: roomId,
        userId: event.sender,
        userName: event.sender,
        isDirect: await this.isDirect(roomId),
        buttonId,
        messageId: relation.event_id,
      });
      return;
    }
    const encrypted = event.type === "m.room.encrypted";
    if (!encrypted && event.type !== "m.room.message") return;
    // m.notice is what bots send; answering it would let two bots talk forever (the spec asks not to).
    if (event.content.msgtype === "m.notice") return;
    // An edit of an earlier message is not a new message.
    if (relation?.rel_type === "m.replace") return;
    const sender: InboundSender = {
      channel: this.name,
      chatId: roomId,
      userId: event.sender,
      userName: event.sender,
      isDirect: await this.isDirect(roomId),
    };
    if (this.screen(sender) !== "allowed") {
      await sink.message({
        ...sender,
        messageId: event.event_id,
        text: "",
        mentionsBot: true,
        attachments: [],
        receivedAt: event.origin_server_ts ?? Date.now(),
      });
      return;
    }
    if (encrypted) return this.noticeEncryption(roomId);
    await sink.message(await this.normalize(roomId, event, relation));
  }

  private async normalize(roomId: string, event: SyncEvent, relation?: Relation): Promise<InboundMessage> {
    const content = event.content;
    const attachment = attachmentOf(content);
    const text = attachment ? "" : stripReplyFallback(String(content.body ?? ""));
    const repliedId = relation?.["m.in_reply_to"]?.event_id;
    const replied = repliedId ? await this.fetchEvent(roomId, repliedId) : null;
    const mentions = content["m.mentions"] as { user_ids?: unknown } | undefined;
    const formatted = typeof content.formatted_body === "string" ? content.formatted_body : "";
    const mentionsBot =
      (Array.isArray(mentions?.user_ids) && mentions.user_ids.includes(this.userId)) ||
      text.includes(this.userId) ||
      formatted.includes(`matrix.to/#/${this.userId}`) ||
      replied?.sender === this.userId;
    return {
      channel: this.name,
      chatId: roomId,
      messageId: event.event_id,
      userId: event.sender,
      userName: event.sender,
      text,
      isDirect: await this.isDirect(roomId),
      mentionsBot,
      replyTo: repliedId
        ? {
            messageId: repliedId,
            userId: replied?.sender,
            text: replied ? stripReplyFallback(String(replied.content.body ?? "")) : undefined,
            fromBot: replied?.sender === this.userId,
          }
        : undefined,
      attachments: attachment ? [attachment] : [],
      receivedAt: event.origin_server_ts ?? Date.now(),
      raw: event,
    };
  }

  private async fetchEvent(roomId: string, eventId: string): Promise<SyncEvent | null> {
    return this.client.http
      .authedRequest<SyncEvent>(Method.Get, `/rooms/${enc(roomId)}/event/${enc(eventId)}`)
      .catch(() => null);
  }

  /** A room is direct when it has two members, the bot and one person. */
  private async isDirect(roomId: string): Promise<boolean> {
    const known = this.direct.get(roomId);
    if (known !== undefined) return known;
    const members = await this.client.getJoinedRoomMembers(roomId).catch(() => null);
    const direct = members ? Object.keys(members.joined).length === 2 : false;
    if (members) this.direct.set(roomId, direct);
    return direct;
  }

  /**
   * One notice per encrypted room, and nothing else. It goes through the raw client-server API: without crypto
   * the SDK refuses to send into an encrypted room (and this notice must be readable without keys).
   */
  private async noticeEncryption(roomId: string): Promise<void> {
    const key = `matrix.e2ee-notice.${roomId}`;
    if (this.deps.store.kv.get(key, z.boolean())) return;
    this.deps.store.kv.set(key, true);
    const url = `${this.config.homeserverUrl}/_matrix/client/v3/rooms/${enc(roomId)}/send/m.room.message/${this.nextTxn()}`;
    const response = await fetch(url, {
      method: "PUT",
      headers: { authorization: `Bearer ${this.config.accessToken}`, "content-type": "application/json" },
      body: JSON.stringify({ msgtype: "m.notice", body: ENCRYPTION_NOTICE }),
    }).catch((error: unknown) => error);
    if (!(response instanceof Response) || !response.ok) {
      this.deps.logger.warn(
        { channel: this.name, roomId },
        "matrix: the encryption notice was not delivered",
      );
    }
  }

  private nextTxn(): string {
    return `magpie.${Date.now()}.${this.txn++}`;
  }

  async send(target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult> {
    return sendParts(
      target,
      message,
      {
        limit: LIMIT,
        render: (text, format) => (format === "plain" ? escapeHtml(text) : renderMatrixHtml(text)),
        markup: (buttons) => buttons.flat().slice(0, NUMBER_KEYS.length),
        edit: (messageId, part, buttons) => this.editPart(target, messageId, part, buttons),
        post: (part, buttons, first) => this.post(target, part, buttons, first),
        captionLimit: 0,
        postFile: (file, _caption, buttons, first) => this.postFile(target, file, buttons, first),
      },
      progress,
    );
  }

  private async sendEvent(roomId: string, type: string, content: Record<string, unknown>): Promise<string> {
    try {
      const sent = await this.client.http.authedRequest<{ event_id: string }>(
        Method.Put,
        `/rooms/${enc(roomId)}/send/${enc(type)}/${enc(this.nextTxn())}`,
        undefined,
        content,
      );
      return sent.event_id;
    } catch (error) {
      throw toSendError(error);
    }
  }

  private async post(
    target: ReplyTarget,
    part: RenderedPart,
    buttons: Button[] | undefined,
    first: boolean,
  ): Promise<string> {
    const content: Record<string, unknown> = {
      msgtype: "m.text",
      ...textContent(part, buttons),
      ...(first && target.replyToMessageId
        ? { "m.relates_to": { "m.in_reply_to": { event_id: target.replyToMessageId } } }
        : {}),
    };
    const eventId = await this.sendEvent(target.chatId, "m.room.message", content);
    await this.offerButtons(target.chatId, eventId, buttons);
    return eventId;
  }

  /** Reacts with 1️⃣… on the message so a person only has to tap one; remembers which key is which button. */
  private async offerButtons(roomId: string, eventId: string, buttons: Button[] | undefined): Promise<void> {
    if (!buttons?.length) return;
    for (const [index, button] of buttons.entries()) {
      const key = NUMBER_KEYS[index]!;
      this.buttons.set(`${eventId}|${key}`, button.id);
      if (this.buttons.size > MAX_BUTTON_MESSAGES * NUMBER_KEYS.length)
        this.buttons.delete(this.buttons.keys().next().value!);
      await this.sendEvent(roomId, "m.reaction", {
        "m.relates_to": { rel_type: "m.annotation", event_id: eventId, key },
      }).catch((error) =>
        this.deps.logger.debug({ channel: this.name, err: errorMessage(error) }, "matrix reaction failed"),
      );
    }
  }

  private async editPart(
    target: ReplyTarget,
    messageId: string,
    part: RenderedPart,
    buttons: Button[] | undefined,
  ): Promise<void> {
    const fresh = { msgtype: "m.text", ...textContent(part, buttons) };
    await this.sendEvent(target.chatId, "m.room.message", {
      msgtype: "m.text",
      body: `* ${fresh.body}`,
      "m.new_content": fresh,
      "m.relates_to": { rel_type: "m.replace", event_id: messageId },
    });
    await this.offerButtons(target.chatId, messageId, buttons);
  }

  async edit(target: ReplyTarget, messageId: string, message: OutboundMessage): Promise<void> {
    const [part] = renderParts(message.text, LIMIT, (text) =>
      message.format === "plain" ? escapeHtml(text) : renderMatrixHtml(text),
    );
    if (!part) return;
    await this.editPart(target, messageId, part, message.buttons?.flat());
  }

  /** Uploads the file to the homeserver's media repository and sends it as m.image, m.audio or m.file. */
  private async postFile(
    target: ReplyTarget,
    file: OutboundFile,
    buttons: Button[] | undefined,
    first: boolean,
  ): Promise<string> {
    const bytes = await readOutboundFile(file);
    const name = file.name.replace(/[\r\n]/g, " ");
    const mime = file.mime ?? (file.kind === "photo" ? "image/png" : "application/octet-stream");
    let uri: string;
    try {
      uri = (await this.client.uploadContent(bytes, { name, type: mime, includeFilename: true })).content_uri;
    } catch (error) {
      throw toSendError(error);
    }
    const msgtype = file.kind === "photo" ? "m.image" : mime.startsWith("audio/") ? "m.audio" : "m.file";
    const eventId = await this.sendEvent(target.chatId, "m.room.message", {
      msgtype,
      body: name,
      url: uri,
      info: { mimetype: mime, size: bytes.length },
      // A spoken reply shows as a voice message in clients that know MSC3245 (Element), as audio elsewhere.
      ...(file.kind === "voice" ? { "org.matrix.msc3245.voice": {} } : {}),
      ...(first && target.replyToMessageId
        ? { "m.relates_to": { "m.in_reply_to": { event_id: target.replyToMessageId } } }
        : {}),
    });
    await this.offerButtons(target.chatId, eventId, buttons);
    return eventId;
  }

  async typing(target: ReplyTarget): Promise<void> {
    await this.client
      .sendTyping(target.chatId, true, 10_000)
      .catch((error) =>
        this.deps.logger.debug({ channel: this.name, err: errorMessage(error) }, "typing failed"),
      );
  }

  async download(attachment: Attachment): Promise<Buffer> {
    const match = /^mxc:\/\/([A-Za-z0-9.:-]+)\/([A-Za-z0-9_-]+)$/.exec(attachment.id);
    if (!match) {
      throw new MagpieError("channel.matrix.bad_media", `Not a Matrix media URI: ${attachment.id}`);
    }
    // Always from the configured homeserver (authenticated media), whatever server the URI names.
    return this.files.download(
      `${this.config.homeserverUrl}/_matrix/client/v1/media/download/${match[1]}/${match[2]}`,
    );
  }

  /** The running /sync hung past the liveness limit: abandon it and sync again on a fresh request. */
  reconnect(reason: string): void {
    if (this.stopped || !this.cycle) return;
    this.status$.set("reconnecting", reason);
    this.deps.logger.warn({ channel: this.name, reason }, "matrix sync abandoned; syncing again");
    this.cycle.abort();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.abort.abort();
    await this.loop?.catch(() => undefined);
    this.abort = new AbortController();
    this.client.stopClient();
    this.status$.set("stopped");
  }

  status(): ChannelStatus {
    return this.status$.get();
  }
}

const enc = encodeURIComponent;

/** The SDK's logger interface over pino: warnings and errors kept, its per-request chatter dropped. */
function sdkLogger(logger: ChannelDeps["logger"]): SdkLogger {
  const quiet = () => undefined;
  const text = (parts: unknown[]) => parts.map((part) => errorMessage(part)).join(" ");
  const sdk: SdkLogger = {
    trace: quiet,
    debug: quiet,
    info: quiet,
    warn: (...parts: unknown[]) => logger.warn({ channel: "matrix" }, text(parts)),
    error: (...parts: unknown[]) => logger.error({ channel: "matrix" }, text(parts)),
    getChild: () => sdk,
  };
  return sdk;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The agent's Markdown as Matrix HTML: Telegram's tag set (which Matrix shares), line breaks outside <pre>. */
export function renderMatrixHtml(markdown: string): string {
  const html = renderMarkdown(markdown, "telegram-html");
  let out = "";
  let at = 0;
  while (at < html.length) {
    const open = html.indexOf("<pre>", at);
    if (open < 0) {
      out += html.slice(at).replaceAll("\n", "<br>");
      break;
    }
    const close = html.indexOf("</pre>", open);
    const end = close < 0 ? html.length : close + "</pre>".length;
    out += html.slice(at, open).replaceAll("\n", "<br>") + html.slice(open, end);
    at = end;
  }
  return out;
}

/** body + formatted_body of a part, with the buttons listed under it (the reactions to tap). */
function textContent(part: RenderedPart, buttons: Button[] | undefined) {
  const choices = (buttons ?? []).map((button, index) => `${NUMBER_KEYS[index]} ${button.label}`);
  const plainChoices = choices.length ? `\n\n${choices.join("  ")}` : "";
  const htmlChoices = choices.length ? `<br><br>${escapeHtml(choices.join("  "))}` : "";
  return {
    body: `${part.plain}${plainChoices}`,
    format: "org.matrix.custom.html",
    formatted_body: `${part.formatted}${htmlChoices}`,
    ...(buttons?.length
      ? {
          [BUTTONS_KEY]: buttons.map((button, index) => ({
            key: NUMBER_KEYS[index],
            id: button.id,
            label: button.label,
          })),
        }
      : {}),
  };
}

/** Drops the `> <@user> quoted text` lines a reply's body starts with (the spec's reply fallback). */
function stripReplyFallback(body: string): string {
  if (!body.startsWith("> ")) return body;
  const lines = body.split("\n");
  let index = 0;
  while (index < lines.length && lines[index]!.startsWith("> ")) index++;
  return lines.slice(index).join("\n").replace(/^\n+/, "");
}

function attachmentOf(content: Record<string, unknown>): Attachment | null {
  const kinds: Record<string, AttachmentKind> = {
    "m.image": "image",
    "m.file": "file",
    "m.audio": "audio",
    "m.video": "video",
  };
  const msgtype = String(content.msgtype ?? "");
  const kind = kinds[msgtype];
  if (!kind || typeof content.url !== "string") return null;
  const info = (content.info ?? {}) as { mimetype?: string; size?: number };
  const voice = kind === "audio" && "org.matrix.msc3245.voice" in content;
  return {
    kind: voice ? "voice" : kind,
    id: content.url,
    name: typeof content.body === "string" ? content.body : undefined,
    mime: info.mimetype,
    size: info.size,
  };
}

/** Maps a client-server API failure onto the outbox's retry contract. */
function toSendError(error: unknown): ChannelSendError {
  if (error instanceof ChannelSendError) return error;
  if (error instanceof MatrixError && error.httpStatus) {
    if (error.httpStatus === 429) {
      const ms = Number(error.data.retry_after_ms ?? 1000);
      return new ChannelSendError(`Matrix rate limit: retry after ${ms} ms`, {
        code: "channel.rate_limited",
        retryAfterMs: ms,
        cause: error,
      });
    }
    return new ChannelSendError(
      `The Matrix homeserver refused the message (${error.httpStatus} ${error.errcode ?? ""})`,
      {
        code: "channel.matrix.refused",
        permanent: error.httpStatus >= 400 && error.httpStatus < 500,
        cause: error,
      },
    );
  }
  return new ChannelSendError(`Matrix send failed: ${errorMessage(error)}`, {
    code: "channel.network",
    cause: error,
  });
}

/** Factory used by channels/index.ts. */
export function createMatrixChannel(deps: ChannelDeps): ChannelAdapter {
  return new MatrixChannel(deps);
}
