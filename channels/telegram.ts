import {
  type ApiClientOptions,
  Bot,
  type Context,
  GrammyError,
  HttpError,
  InlineKeyboard,
  InputFile,
  webhookCallback,
} from "grammy";
import type { Message, MessageEntity } from "grammy/types";
import type {
  Attachment,
  ChannelAdapter,
  ChannelCapabilities,
  ChannelStatus,
  InboundMessage,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
  SendProgress,
  SendResult,
} from "../src/core/types.js";
import { ChannelSendError, errorMessage, MagpieError } from "../src/lib/errors.js";
import { leanFetch } from "../src/lib/lean-fetch.js";
import { GuardRefusal } from "../src/security/guard-refusal.js";
import { PlatformFiles } from "../src/security/platform-files.js";
import { backoffDelay } from "./backoff.js";
import { ButtonIdMap } from "./button-ids.js";
import type { ChannelDeps } from "./channel-deps.js";
import { type RenderedPart, renderParts } from "./format/chunk.js";
import { renderMarkdown } from "./format/markdown.js";
import { type Pacer, telegramPacer } from "./format/pacer.js";
import { livenessLimit, receiveCycleSecs } from "./liveness.js";
import {
  formattedOrPlain,
  hasCaption,
  type OutboundFile,
  readOutboundFile,
  sendParts,
} from "./send-parts.js";
import { StatusTracker } from "./status-tracker.js";
import { TELEGRAM_LONG_POLL_SECS } from "./telegram-entry.js";

const TOKEN_HINT = "Check TELEGRAM_BOT_TOKEN or channels.telegram.token.";
const LIMIT = 4096;
/** sendPhoto / sendDocument captions (core.telegram.org/bots/api#sendphoto). */
const CAPTION_LIMIT = 1024;
/** sendPhoto refusals that the same bytes survive as a document (too large, odd dimensions, not decodable). */
const PHOTO_REFUSED =
  /PHOTO_INVALID_DIMENSIONS|PHOTO_SAVE_FILE_INVALID|IMAGE_PROCESS_FAILED|too big|wrong type/i;
const TELEGRAM_API_ROOT = "https://api.telegram.org";
/** What getFile returns as `file_path`: relative segments like `documents/file_12.pdf`. */
const TELEGRAM_FILE_PATH = /^[\w.-]+(?:\/[\w.-]+)*$/;

/** Inbound message ids are per chat on Telegram; Magpie's ids are `<chatId>:<messageId>` so they are unique. */
const platformMessageId = (messageId: string): number => Number(messageId.split(":").pop());

/** Telegram via grammY: long polling (default) or webhook at /telegram/webhook; HTML formatting. */
export class TelegramChannel implements ChannelAdapter {
  readonly name = "telegram";
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: LIMIT,
    edit: true,
    buttons: true,
    typing: true,
    threads: true,
  };
  private readonly bot: Bot;
  private readonly status$ = new StatusTracker();
  private readonly buttonIds = new ButtonIdMap(64);
  private readonly pacer: Pacer | null;
  private readonly files: PlatformFiles;
  private readonly config: ChannelDeps["config"]["channels"]["telegram"];
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private pollFailures = 0;
  /** The getUpdates long poll in flight, if any. */
  private cycle: AbortController | null = null;
  /** Seconds grammY asks Telegram to hold a long poll: fitted within the liveness limit. */
  private readonly pollSecs: number;

  constructor(private readonly deps: ChannelDeps) {
    this.config = deps.config.channels.telegram;
    this.pollSecs = receiveCycleSecs(
      livenessLimit(this.config, TELEGRAM_LONG_POLL_SECS + 15),
      TELEGRAM_LONG_POLL_SECS,
    );
    const token = this.config.token;
    if (!token) {
      throw new MagpieError(
        "channel.telegram.no_token",
        "Telegram is enabled but has no token. Set TELEGRAM_BOT_TOKEN or channels.telegram.token.",
      );
    }
    if (this.config.mode === "webhook" && !this.config.webhookSecret) {
      throw new MagpieError(
        "channel.telegram.no_webhook_secret",
        "channels.telegram.mode is webhook but channels.telegram.webhookSecret is not set: set a random secret so forged updates are refused.",
      );
    }
    this.bot = new Bot(token, {
      client: {
        ...(this.config.apiRoot ? { apiRoot: this.config.apiRoot } : {}),
        // undici's request() under a fetch instead of grammY's node-fetch (src/lib/lean-fetch.ts): each long poll
        // and send costs less on the way from a message's arrival to its turn.
        fetch: leanFetch() as unknown as NonNullable<ApiClientOptions["fetch"]>,
      },
    });
    this.pacer = this.config.pacing ? telegramPacer() : null;
    this.files = new PlatformFiles({
      platform: "Telegram",
      hosts: [new URL(TELEGRAM_API_ROOT).hostname],
      endpoint: this.config.apiRoot,
    });
    this.bot.api.config.use(async (previous, method, payload, signal) => {
      if (method !== "getUpdates") return previous(method, payload, signal);
      // grammY's signal is the abort-controller polyfill's (typed and made so): Node's AbortSignal.any would take
      // it without following it, so the poll's own controller follows it by listener.
      const grammySignal = signal as AbortSignal | undefined;
      for (;;) {
        // Each long poll can be abandoned on its own (`reconnect`) without stopping grammY's loop.
        const cycle = new AbortController();
        this.cycle = cycle;
        const follow = () => cycle.abort();
        if (grammySignal?.aborted) follow();
        grammySignal?.addEventListener("abort", follow);
        // Once stopping, grammY's last getUpdates only confirms the offset: a server that holds it must not
        // hold up the shutdown.
        const giveUp = this.stopped ? setTimeout(follow, 3000) : undefined;
        try {
          // Node's signal where grammY's type names the polyfill (node-fetch takes either).
          const result = await previous(method, payload, cycle.signal as typeof signal);
          this.pollFailures = 0;
          if (!this.stopped) this.status$.received();
          return result;
        } catch (error) {
          if (this.stopped || grammySignal?.aborted) throw error;
          // Abandoned by `reconnect` (the poll hung past the channel's limit): ask again at once, on a new socket.
          if (cycle.signal.aborted) continue;
          this.status$.set("reconnecting", `getUpdates failed: ${errorMessage(error)}`);
          // grammY retries after a fixed 3 s; from the second failure in a row, wait longer each time.
          if (this.pollFailures++ > 0 && !(error instanceof GrammyError && error.error_code === 401)) {
            await abortableSleep(backoffDelay(this.pollFailures - 1, 1000, 60_000), grammySignal);
          }
          throw error;
        } finally {
          clearTimeout(giveUp);
          grammySignal?.removeEventListener("abort", follow);
          if (this.cycle === cycle) this.cycle = null;
        }
      }
    });
  }

  /** The running long poll hung past the liveness limit: abandon it and poll again on a fresh connection. */
  reconnect(reason: string): void {
    if (this.stopped || this.config.mode === "webhook") return;
    this.status$.set("reconnecting", reason);
    this.deps.logger.warn({ channel: this.name, reason }, "telegram long poll abandoned; polling again");
    this.cycle?.abort();
  }

  async start(sink: InboundSink): Promise<void> {
    this.bot.on("message", (context) => this.onMessage(context, sink));
    this.bot.on("callback_query:data", async (context) => {
      await context.answerCallbackQuery().catch(() => undefined);
      const query = context.callbackQuery;
      const chat = query.message?.chat;
      if (!chat || query.from.is_bot) return;
      await sink.buttonPressed({
        channel: this.name,
        chatId: String(chat.id),
        threadId: query.message?.is_topic_message ? String(query.message.message_thread_id) : undefined,
        userId: String(query.from.id),
        userName: displayName(query.from),
        isDirect: chat.type === "private",
        buttonId: this.buttonIds.decode(query.data),
        messageId: query.message ? String(query.message.message_id) : undefined,
      });
    });
    this.bot.catch((error) => {
      this.deps.logger.error({ err: error.error, channel: this.name }, "telegram update handling failed");
    });
    await this.connect();
  }

  /** getMe (token check), then polling or the webhook route; network trouble at start-up retries with back-off. */
  private async connect(attempt = 0): Promise<void> {
    try {
      // getMe directly, not bot.init(): init retries network errors forever and would block start-up.
      this.bot.botInfo = await this.bot.api.getMe();
    } catch (error) {
      if (error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404)) {
        const message = `Telegram rejected the token (${error.error_code}). ${TOKEN_HINT}`;
        this.status$.set("failed", message);
        throw new MagpieError("channel.telegram.unauthorized", message, { cause: error });
      }
      this.status$.set("reconnecting", `cannot reach Telegram: ${errorMessage(error)}`);
      this.deps.logger.warn(
        { channel: this.name, err: errorMessage(error) },
        "telegram unreachable, retrying",
      );
      this.retryTimer = setTimeout(() => {
        this.connect(attempt + 1).catch((inner) => this.status$.set("failed", errorMessage(inner)));
      }, backoffDelay(attempt));
      return;
    }
    if (this.stopped) return;
    if (this.config.mode === "webhook") {
      const handler = webhookCallback(this.bot, "http", { secretToken: this.config.webhookSecret });
      this.deps.http.route("POST", "/telegram/webhook", handler);
      if (this.config.webhookUrl) {
        await this.bot.api.setWebhook(this.config.webhookUrl, { secret_token: this.config.webhookSecret });
      }
      this.status$.set("connected");
      return;
    }
    this.bot
      .start({
        drop_pending_updates: false,
        timeout: this.pollSecs,
        onStart: () => this.status$.set("connected"),
      })
      .catch((error) => {
        const detail =
          error instanceof GrammyError && error.error_code === 401
            ? `Telegram rejected the token (401). ${TOKEN_HINT}`
            : error instanceof GrammyError && error.error_code === 409
              ? "Another process is polling this bot (409 Conflict): stop it, or use webhook mode."
              : `polling stopped: ${errorMessage(error)}`;
        this.status$.set("failed", detail);
        this.deps.logger.error({ channel: this.name }, detail);
      });
  }

  private async onMessage(context: Context, sink: InboundSink): Promise<void> {
    const message = context.message;
    if (!message?.from || message.from.is_bot) return;
    const inbound = this.normalize(message);
    // Awaited on purpose: grammY asks for the next offset only after this resolves (inbox first, then ack).
    await sink.message(inbound);
  }

  private normalize(message: Message): InboundMessage {
    const me = this.bot.botInfo;
    const text = message.text ?? message.caption ?? "";
    const entities = message.entities ?? message.caption_entities ?? [];
    const replied = message.reply_to_message;
    const mentionsBot =
      entities.some((entity) => mentionsMe(entity, text, me.username, me.id)) || replied?.from?.id === me.id;
    return {
      channel: this.name,
      chatId: String(message.chat.id),
      threadId:
        message.is_topic_message && message.message_thread_id ? String(message.message_thread_id) : undefined,
      messageId: `${message.chat.id}:${message.message_id}`,
      userId: String(message.from!.id),
      userName: displayName(message.from!),
      text,
      isDirect: message.chat.type === "private",
      mentionsBot,
      replyTo: replied
        ? {
            messageId: `${message.chat.id}:${replied.message_id}`,
            userId: replied.from ? String(replied.from.id) : undefined,
            text: replied.text ?? replied.caption,
            fromBot: replied.from?.id === me.id,
          }
        : undefined,
      attachments: attachmentsOf(message),
      receivedAt: message.date * 1000,
      raw: message,
    };
  }

  async send(target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult> {
    return sendParts(
      target,
      message,
      {
        limit: LIMIT,
        render: (text, format) => (format === "plain" ? text : renderMarkdown(text, "telegram-html")),
        pacer: this.pacer,
        markup: (buttons) => this.keyboard(buttons),
        edit: (messageId, part, keyboard) =>
          this.editText(target, platformMessageId(messageId), part, message.format, keyboard),
        post: (part, keyboard, first) => this.sendText(target, part, message.format, keyboard, first),
        captionLimit: CAPTION_LIMIT,
        postFile: (file, caption, keyboard, first) =>
          this.sendFile(target, file, caption, message.format, keyboard, first),
      },
      progress,
    );
  }

  /** Options every new message shares: the topic, the reply (first part only) and the keyboard. */
  private sendBase(target: ReplyTarget, keyboard: InlineKeyboard | undefined, threaded: boolean) {
    return {
      ...(target.threadId ? { message_thread_id: Number(target.threadId) } : {}),
      ...(threaded && target.replyToMessageId
        ? {
            reply_parameters: {
              message_id: platformMessageId(target.replyToMessageId),
              allow_sending_without_reply: true,
            },
          }
        : {}),
      ...(keyboard ? { reply_markup: keyboard } : {}),
    };
  }

  /**
   * sendPhoto for a photo, sendVoice for a spoken reply (OGG/Opus), sendDocument otherwise (multipart, bytes read now); a photo Telegram cannot take as
   * a photo (dimensions, format) goes again as a document, and a refused HTML caption as plain text.
   */
  private async sendFile(
    target: ReplyTarget,
    file: OutboundFile,
    caption: RenderedPart | undefined,
    format: OutboundMessage["format"],
    keyboard: InlineKeyboard | undefined,
    threaded: boolean,
  ): Promise<string> {
    const bytes = await readOutboundFile(file);
    const base = this.sendBase(target, keyboard, threaded);
    const send = (kind: OutboundFile["kind"], html: boolean): Promise<{ message_id: number }> => {
      const text = !hasCaption(caption)
        ? {}
        : html
          ? { caption: caption.formatted, parse_mode: "HTML" as const }
          : { caption: caption.plain };
      // A new InputFile each call: grammY consumes it while streaming the upload.
      const upload = new InputFile(bytes, file.name.replace(/[\r\n]/g, " "));
      if (kind === "photo") return this.bot.api.sendPhoto(target.chatId, upload, { ...base, ...text });
      if (kind === "voice") return this.bot.api.sendVoice(target.chatId, upload, { ...base, ...text });
      return this.bot.api.sendDocument(target.chatId, upload, { ...base, ...text });
    };
    const sendAs = (kind: OutboundFile["kind"]) =>
      formattedOrPlain(
        () => send(kind, format !== "plain"),
        () => send(kind, false),
        (error) => format !== "plain" && isFormattingRejection(error),
      );
    try {
      const sent = await sendAs(file.kind).catch((error) => {
        if (file.kind === "voice" && isVoiceRefusal(error)) {
          // The person's privacy settings forbid voice notes from bots: the audio still arrives, as a file.
          this.deps.logger.warn(
            { channel: this.name },
            "Telegram refused the voice note; sending it as a file",
          );
          return sendAs("document");
        }
        if (file.kind !== "photo" || !isPhotoRefusal(error)) throw error;
        this.deps.logger.warn(
          { channel: this.name, file: file.name },
          "Telegram refused the image as a photo; sending it as a document",
        );
        return sendAs("document");
      });
      return String(sent.message_id);
    } catch (error) {
      throw toSendError(error);
    }
  }

  private async sendText(
    target: ReplyTarget,
    part: RenderedPart,
    format: OutboundMessage["format"],
    keyboard: InlineKeyboard | undefined,
    threaded: boolean,
  ): Promise<string> {
    const base = this.sendBase(target, keyboard, threaded);
    const sendPlain = async () =>
      (await this.bot.api.sendMessage(target.chatId, part.plain, base)).message_id;
    try {
      if (format === "plain") return String(await sendPlain());
      const sent = await formattedOrPlain(
        async () =>
          (await this.bot.api.sendMessage(target.chatId, part.formatted, { ...base, parse_mode: "HTML" }))
            .message_id,
        () => {
          this.deps.logger.warn(
            { channel: this.name },
            "Telegram rejected the formatting; resending as plain text",
          );
          return sendPlain();
        },
        isFormattingRejection,
      );
      return String(sent);
    } catch (error) {
      throw toSendError(error);
    }
  }

  private async editText(
    target: ReplyTarget,
    messageId: number,
    part: RenderedPart,
    format: OutboundMessage["format"],
    keyboard?: InlineKeyboard,
  ): Promise<void> {
    const base = keyboard ? { reply_markup: keyboard } : {};
    try {
      await formattedOrPlain(
        () =>
          format === "plain"
            ? this.bot.api.editMessageText(target.chatId, messageId, part.plain, base)
            : this.bot.api.editMessageText(target.chatId, messageId, part.formatted, {
                ...base,
                parse_mode: "HTML",
              }),
        () => this.bot.api.editMessageText(target.chatId, messageId, part.plain, base),
        isFormattingRejection,
      );
    } catch (error) {
      if (error instanceof GrammyError && /message is not modified/i.test(error.description)) return;
      throw toSendError(error);
    }
  }

  async edit(target: ReplyTarget, messageId: string, message: OutboundMessage): Promise<void> {
    const [part] = renderParts(message.text, LIMIT, (text) => renderMarkdown(text, "telegram-html"));
    if (!part) return;
    await this.editText(
      target,
      platformMessageId(messageId),
      part,
      message.format,
      message.buttons ? this.keyboard(message.buttons) : undefined,
    );
  }

  async typing(target: ReplyTarget): Promise<void> {
    await this.bot.api
      .sendChatAction(
        target.chatId,
        "typing",
        target.threadId ? { message_thread_id: Number(target.threadId) } : {},
      )
      .catch((error) =>
        this.deps.logger.debug({ channel: this.name, err: errorMessage(error) }, "typing failed"),
      );
  }

  async download(attachment: Attachment): Promise<Buffer> {
    const file = await this.bot.api.getFile(attachment.id);
    if (!file.file_path)
      throw new MagpieError("channel.telegram.no_file", `Telegram has no file for ${attachment.id}.`);
    // The URL carries the bot token, so the path from getFile must stay a plain relative path under
    // /file/bot<token>/ on the API host: no `..`, no escapes, no absolute URL.
    if (
      !TELEGRAM_FILE_PATH.test(file.file_path) ||
      file.file_path.split("/").some((part) => /^\.+$/.test(part))
    ) {
      throw new GuardRefusal(
        "attachment.foreign_host",
        "Telegram answered getFile with a file path that leaves the bot's file directory; it was not downloaded and no credential was sent.",
      );
    }
    const root = this.config.apiRoot ?? TELEGRAM_API_ROOT;
    return this.files.download(`${root}/file/bot${this.config.token}/${file.file_path}`);
  }

  private keyboard(rows: NonNullable<OutboundMessage["buttons"]>): InlineKeyboard {
    const keyboard = new InlineKeyboard();
    for (const row of rows) {
      for (const button of row) keyboard.text(button.label, this.buttonIds.encode(button.id));
      keyboard.row();
    }
    return keyboard;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.bot.isRunning()) await this.bot.stop().catch(() => undefined);
    this.status$.set("stopped");
  }

  status(): ChannelStatus {
    return this.status$.get();
  }
}

/** Sleeps, ending early when `signal` aborts (bot.stop() aborts the pending getUpdates). */
function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

function displayName(user: { first_name: string; last_name?: string; username?: string }): string {
  return user.username ? `@${user.username}` : [user.first_name, user.last_name].filter(Boolean).join(" ");
}

function mentionsMe(entity: MessageEntity, text: string, username: string, botId: number): boolean {
  if (entity.type === "text_mention") return entity.user.id === botId;
  if (entity.type === "mention" || entity.type === "bot_command") {
    const value = text.slice(entity.offset, entity.offset + entity.length).toLowerCase();
    return entity.type === "mention"
      ? value === `@${username.toLowerCase()}`
      : value.endsWith(`@${username.toLowerCase()}`);
  }
  return false;
}

function attachmentsOf(message: Message): Attachment[] {
  const out: Attachment[] = [];
  const largestPhoto = message.photo?.at(-1);
  if (largestPhoto)
    out.push({ kind: "image", id: largestPhoto.file_id, mime: "image/jpeg", size: largestPhoto.file_size });
  if (message.document) {
    const doc = message.document;
    out.push({
      kind: "file",
      id: doc.file_id,
      name: doc.file_name,
      mime: doc.mime_type,
      size: doc.file_size,
    });
  }
  if (message.audio)
    out.push({
      kind: "audio",
      id: message.audio.file_id,
      name: message.audio.file_name,
      mime: message.audio.mime_type,
      size: message.audio.file_size,
    });
  if (message.voice)
    out.push({
      kind: "voice",
      id: message.voice.file_id,
      mime: message.voice.mime_type,
      size: message.voice.file_size,
    });
  if (message.video)
    out.push({
      kind: "video",
      id: message.video.file_id,
      name: message.video.file_name,
      mime: message.video.mime_type,
      size: message.video.file_size,
    });
  if (message.sticker)
    out.push({ kind: "sticker", id: message.sticker.file_id, size: message.sticker.file_size });
  return out;
}

function isFormattingRejection(error: unknown): boolean {
  return (
    error instanceof GrammyError &&
    error.error_code === 400 &&
    /can't parse entities|parse entities|unsupported start tag/i.test(error.description)
  );
}

/** sendVoice refused because the person does not take voice notes (Telegram Premium privacy setting). */
function isVoiceRefusal(error: unknown): boolean {
  return (
    error instanceof GrammyError &&
    error.error_code === 400 &&
    /VOICE_MESSAGES_FORBIDDEN/.test(error.description)
  );
}

function isPhotoRefusal(error: unknown): boolean {
  return error instanceof GrammyError && error.error_code === 400 && PHOTO_REFUSED.test(error.description);
}

/** Maps a grammY failure onto the outbox's retry contract. */
function toSendError(error: unknown): ChannelSendError {
  if (error instanceof ChannelSendError) return error;
  if (error instanceof GrammyError) {
    if (error.error_code === 429) {
      const seconds = error.parameters.retry_after ?? 1;
      return new ChannelSendError(`Telegram rate limit: retry after ${seconds} s`, {
        code: "channel.rate_limited",
        retryAfterMs: seconds * 1000,
        cause: error,
      });
    }
    return new ChannelSendError(`Telegram refused the message (${error.error_code}): ${error.description}`, {
      code: "channel.telegram.refused",
      permanent: error.error_code >= 400 && error.error_code < 500,
      cause: error,
    });
  }
  if (error instanceof HttpError) {
    return new ChannelSendError(`Telegram unreachable: ${errorMessage(error.error)}`, {
      code: "channel.network",
      cause: error,
    });
  }
  return new ChannelSendError(`Telegram send failed: ${errorMessage(error)}`, { cause: error });
}

/** Factory used by channels/index.ts. */
export function createTelegramChannel(deps: ChannelDeps): ChannelAdapter {
  return new TelegramChannel(deps);
}
