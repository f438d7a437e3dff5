import { App, HTTPReceiver, LogLevel, type types } from "@slack/bolt";
import { z } from "zod";
import type {
  Attachment,
  AttachmentKind,
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
import { PlatformFiles } from "../src/security/platform-files.js";
import { backoffDelay } from "./backoff.js";
import type { ChannelDeps } from "./channel-deps.js";
import { chunkMarkdown, type RenderedPart, renderParts } from "./format/chunk.js";
import { escapeText, renderMarkdown } from "./format/markdown.js";
import { Pacer } from "./format/pacer.js";
import {
  formattedOrPlain,
  hasCaption,
  type OutboundFile,
  readOutboundFile,
  sendParts,
} from "./send-parts.js";
import { AckAfterProcessingSocketReceiver } from "./slack-socket-receiver.js";
import { StatusTracker } from "./status-tracker.js";

type KnownBlock = types.KnownBlock;

const LIMIT = 40_000;
/** Where a workspace's `url_private` files live (https only). */
const SLACK_FILE_HOSTS = ["files.slack.com"];
const SECTION_LIMIT = 3000;
/** The text shared with a file (`initial_comment`); longer text goes as messages before it. */
const FILE_COMMENT_LIMIT = 4000;
const UPLOAD_TIMEOUT_MS = 120_000;
const IGNORED_SUBTYPES = new Set([
  "bot_message",
  "message_changed",
  "message_deleted",
  "channel_join",
  "channel_leave",
  "message_replied",
]);

/** The slice of a Slack message event Magpie reads; Slack adds fields freely, so unknown keys pass. */
const slackMessageEventSchema = z.looseObject({
  type: z.string(),
  subtype: z.string().optional(),
  channel: z.string().optional(),
  channel_type: z.string().optional(),
  user: z.string().optional(),
  bot_id: z.string().optional(),
  text: z.string().optional(),
  ts: z.string().optional(),
  thread_ts: z.string().optional(),
  parent_user_id: z.string().optional(),
  files: z
    .array(
      z.looseObject({
        id: z.string(),
        name: z.string().optional(),
        mimetype: z.string().optional(),
        size: z.number().optional(),
        url_private_download: z.string().optional(),
        url_private: z.string().optional(),
      }),
    )
    .optional(),
});

/** Slack's window for `X-Slack-Request-Timestamp`, applied both ways (api.slack.com/authentication/verifying-requests-from-slack). */
const MAX_TIMESTAMP_SKEW_SECONDS = 5 * 60;

/** True when the request timestamp (seconds) is a number within 5 minutes of now, past or future. */
export function isFreshSlackTimestamp(header: string | string[] | undefined, nowMs: number): boolean {
  if (typeof header !== "string" || !/^\d{1,12}$/.test(header)) return false;
  return Math.abs(Math.floor(nowMs / 1000) - Number(header)) <= MAX_TIMESTAMP_SKEW_SECONDS;
}

type SlackMessageEvent = z.infer<typeof slackMessageEventSchema>;

interface SlackApiError {
  code?: string;
  data?: { error?: string };
  retryAfter?: number;
  statusCode?: number;
}

/** Slack via Bolt: Socket Mode when an app token is set, else signed Events API requests at /slack/events. */
export class SlackChannel implements ChannelAdapter {
  readonly name = "slack";
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: LIMIT,
    edit: true,
    buttons: true,
    typing: false,
    threads: true,
  };
  private readonly app: App;
  private readonly status$ = new StatusTracker();
  private readonly socketReceiver: AckAfterProcessingSocketReceiver | null = null;
  private readonly httpReceiver: HTTPReceiver | null = null;
  private readonly botToken: string;
  private readonly files: PlatformFiles;
  private readonly now: () => number;
  private botUserId = "";
  private sink: InboundSink | null = null;
  private stopped = false;
  private readonly userNames = new Map<string, string>();
  private retryTimer: NodeJS.Timeout | null = null;
  /** chat.postMessage allows about one message per second per channel (api.slack.com/apis/rate-limits). */
  private readonly pacer: Pacer | null;

  constructor(
    private readonly deps: ChannelDeps,
    tuning: { clientPingTimeoutMs?: number; now?: () => number } = {},
  ) {
    this.now = tuning.now ?? Date.now;
    const config = deps.config.channels.slack;
    if (!config.botToken) {
      throw new MagpieError(
        "channel.slack.no_token",
        "Slack is enabled but has no bot token. Set SLACK_BOT_TOKEN or channels.slack.botToken.",
      );
    }
    this.botToken = config.botToken;
    this.files = new PlatformFiles({
      platform: "Slack",
      hosts: SLACK_FILE_HOSTS,
      endpoint: config.apiUrl,
      headers: { authorization: `Bearer ${config.botToken}` },
    });
    this.pacer = config.pacing ? new Pacer({ perChat: () => ({ max: 1, perMs: 1000 }) }) : null;
    const clientOptions = {
      ...(config.apiUrl ? { slackApiUrl: config.apiUrl } : {}),
      // The outbox retries; a 429 must come back with its Retry-After instead of sleeping in here.
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    };
    if (config.appToken) {
      this.socketReceiver = new AckAfterProcessingSocketReceiver({
        appToken: config.appToken,
        clientOptions,
        logger: deps.logger,
        clientPingTimeoutMs: tuning.clientPingTimeoutMs,
        onState: (state, detail) => this.status$.set(state, detail),
        onReceive: () => this.status$.received(),
      });
    } else {
      if (!config.signingSecret) {
        throw new MagpieError(
          "channel.slack.no_signing_secret",
          "Slack without an app token receives events over HTTP and needs the signing secret: set SLACK_SIGNING_SECRET or channels.slack.signingSecret (or SLACK_APP_TOKEN for Socket Mode).",
        );
      }
      this.httpReceiver = new HTTPReceiver({
        signingSecret: config.signingSecret,
        endpoints: "/slack/events",
        // Answer Slack only after the listener ran, i.e. after the inbox write.
        processBeforeResponse: true,
        logLevel: LogLevel.ERROR,
      });
    }
    this.app = new App({
      token: this.botToken,
      receiver: this.socketReceiver ?? this.httpReceiver ?? undefined,
      clientOptions,
      deferInitialization: true,
      logLevel: LogLevel.ERROR,
      ignoreSelf: true,
    });
    this.app.error(async (error) => {
      deps.logger.error({ channel: this.name, err: errorMessage(error) }, "slack listener failed");
      throw error;
    });
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    this.app.event("message", async ({ event }) => this.onMessage(event));
    // A channel mention arrives as both `message` and `app_mention` with the same ts: the inbox's
    // (channel, messageId) uniqueness turns the second into a duplicate, so it is answered once.
    this.app.event("app_mention", async ({ event }) => this.onMessage(event));
    this.app.action(/.*/, async ({ ack, body, action }) => {
      await ack();
      if (body.type !== "block_actions" || !("value" in action) || typeof action.value !== "string") return;
      const channelId = body.channel?.id ?? "";
      const message = body.message as { ts?: string; thread_ts?: string } | undefined;
      await this.sink?.buttonPressed({
        channel: this.name,
        chatId: channelId,
        threadId: message?.thread_ts && message.thread_ts !== message.ts ? message.thread_ts : undefined,
        userId: body.user.id,
        userName: body.user.name ?? body.user.id,
        isDirect: channelId.startsWith("D"),
        buttonId: action.value,
        messageId: message?.ts,
      });
    });
    await this.connect(0);
  }

  /** Checks the bot token, then opens Socket Mode or the HTTP route; network trouble retries with back-off. */
  private async connect(attempt: number): Promise<void> {
    try {
      await this.app.init();
      const identity = await this.app.client.auth.test();
      this.botUserId = String(identity.user_id ?? "");
    } catch (error) {
      const failure = this.startupFailure(error, "bot");
      if (failure.code === "channel.slack.unauthorized" || this.stopped) throw failure;
      this.status$.set("reconnecting", failure.message);
      this.retryTimer = setTimeout(() => {
        this.connect(attempt + 1).catch((inner) => this.status$.set("failed", errorMessage(inner)));
      }, backoffDelay(attempt));
      return;
    }
    if (this.httpReceiver) {
      const receiver = this.httpReceiver;
      this.deps.http.route("POST", "/slack/events", (request, response) => {
        // Bolt refuses old timestamps only; a signed request stamped ahead of our clock would otherwise stay
        // replayable until then.
        if (!isFreshSlackTimestamp(request.headers["x-slack-request-timestamp"], this.now())) {
          this.deps.logger.warn(
            { channel: this.name },
            "slack request refused: timestamp not within 5 minutes",
          );
          response.writeHead(401).end();
          return;
        }
        return receiver.requestListener(request, response);
      });
      this.status$.set("connected");
      return;
    }
    try {
      await this.socketReceiver!.start();
    } catch (error) {
      const failure = this.startupFailure(error, "app");
      if (failure.code === "channel.slack.unauthorized") throw failure;
      this.socketReceiver!.retryInBackground(`could not connect (${errorMessage(error)})`);
    }
  }

  private startupFailure(error: unknown, token: "bot" | "app"): MagpieError {
    const apiError = error as SlackApiError;
    const reason = apiError.data?.error;
    if (
      reason === "invalid_auth" ||
      reason === "not_authed" ||
      reason === "account_inactive" ||
      reason === "token_revoked"
    ) {
      const hint =
        token === "bot"
          ? "Check SLACK_BOT_TOKEN or channels.slack.botToken."
          : "Check SLACK_APP_TOKEN or channels.slack.appToken (an xapp- token with connections:write).";
      const message = `Slack rejected the ${token} token (${reason}). ${hint}`;
      this.status$.set("failed", message);
      return new MagpieError("channel.slack.unauthorized", message, { cause: error });
    }
    const message = `Cannot connect to Slack: ${errorMessage(error)}`;
    this.status$.set("reconnecting", message);
    return new MagpieError("channel.slack.connect_failed", message, { cause: error });
  }

  private async onMessage(payload: unknown): Promise<void> {
    const parsed = slackMessageEventSchema.safeParse(payload);
    if (!parsed.success) {
      this.deps.logger.debug({ channel: this.name }, "slack event of unexpected shape ignored");
      return;
    }
    const event = parsed.data;
    if (event.bot_id || !event.user || event.user === this.botUserId) return;
    if (event.subtype && IGNORED_SUBTYPES.has(event.subtype)) return;
    if (!event.channel || !event.ts) return;
    const userName = await this.displayName(event.user);
    // Awaited: the socket receiver and the HTTP receiver acknowledge Slack only after this resolves.
    await this.sink?.message({ ...this.normalize(event), userName });
  }

  /** The member's display name (users.info, cached); the user id when the lookup fails (no users:read scope). */
  private async displayName(userId: string): Promise<string> {
    const cached = this.userNames.get(userId);
    if (cached) return cached;
    try {
      const result = await this.app.client.users.info({ user: userId });
      const profile = result.user?.profile;
      const name = profile?.display_name || profile?.real_name || result.user?.name || userId;
      this.userNames.set(userId, name);
      if (this.userNames.size > 5000) this.userNames.delete(this.userNames.keys().next().value!);
      return name;
    } catch (error) {
      this.deps.logger.debug({ channel: this.name, err: errorMessage(error) }, "slack users.info failed");
      return userId;
    }
  }

  private normalize(event: SlackMessageEvent): InboundMessage {
    const channel = event.channel!;
    const ts = event.ts!;
    const text = event.text ?? "";
    const mention = `<@${this.botUserId}>`;
    const inThread = event.thread_ts !== undefined && event.thread_ts !== ts;
    const threadStartedByBot = inThread && event.parent_user_id === this.botUserId;
    return {
      channel: this.name,
      chatId: channel,
      threadId: inThread ? event.thread_ts : undefined,
      messageId: `${channel}:${ts}`,
      userId: event.user!,
      userName: event.user!,
      text: unescapeSlack(text.replaceAll(mention, "@magpie")).trim(),
      isDirect: event.channel_type === "im" || channel.startsWith("D"),
      mentionsBot: this.botUserId !== "" && (text.includes(mention) || threadStartedByBot),
      replyTo: inThread
        ? {
            messageId: `${channel}:${event.thread_ts}`,
            userId: event.parent_user_id,
            fromBot: threadStartedByBot,
          }
        : undefined,
      attachments: (event.files ?? []).map((file) => ({
        kind: kindOf(file.mimetype),
        id: file.id,
        name: file.name,
        mime: file.mimetype,
        size: file.size,
        url: file.url_private_download ?? file.url_private,
      })),
      receivedAt: Math.round(Number(ts) * 1000),
      raw: event,
    };
  }

  async send(target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult> {
    const plain = message.format === "plain";
    const threadTs = this.threadTsFor(target);
    return sendParts(
      target,
      message,
      {
        limit: LIMIT,
        render: renderSlack,
        pacer: this.pacer,
        markup: (buttons) => buttons,
        edit: (ts, part, buttons) => this.update(target.chatId, ts, part, buttons, plain),
        // Every part goes into the thread, not only the first.
        post: (part, buttons) => this.post(target.chatId, threadTs, part, buttons, plain),
        captionLimit: FILE_COMMENT_LIMIT,
        // A shared file carries no blocks: a message with buttons keeps them on its text, sent before the file.
        filesTakeButtons: false,
        postFile: (file, caption) => this.postFile(target.chatId, threadTs, file, caption),
      },
      progress,
    );
  }

  /**
   * The external upload flow (what files.uploadV2 does, one call at a time): files.getUploadURLExternal,
   * the bytes POSTed to the returned URL, then files.completeUploadExternal shares the file in the channel.
   * A failure anywhere shares nothing, so the outbox's retry starts the flow again and the file appears once.
   */
  private async postFile(
    channel: string,
    threadTs: string | undefined,
    file: OutboundFile,
    caption: RenderedPart | undefined,
  ): Promise<string> {
    const bytes = await readOutboundFile(file);
    try {
      const ticket = await this.app.client.files.getUploadURLExternal({
        filename: file.name,
        length: bytes.length,
      });
      if (!ticket.upload_url || !ticket.file_id) {
        throw new ChannelSendError("Slack gave no upload URL for the file.", {
          code: "channel.slack.upload_failed",
        });
      }
      await this.upload(ticket.upload_url, bytes, file);
      await this.app.client.files.completeUploadExternal({
        files: [{ id: ticket.file_id, title: file.name }],
        channel_id: channel,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        ...(hasCaption(caption) ? { initial_comment: caption.formatted } : {}),
      });
      return ticket.file_id;
    } catch (error) {
      throw toSendError(error);
    }
  }

  /** POSTs the bytes to Slack's upload URL; the bot token goes only to Slack's own file host. */
  private async upload(uploadUrl: string, bytes: Buffer, file: OutboundFile): Promise<void> {
    let url: URL;
    try {
      url = this.files.check(uploadUrl);
    } catch (error) {
      throw new ChannelSendError(`Slack's upload URL is not on Slack's file host: ${errorMessage(error)}`, {
        code: "channel.slack.upload_foreign_host",
        permanent: true,
        cause: error,
      });
    }
    const response = await fetch(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${this.botToken}`,
        "content-type": file.mime ?? "application/octet-stream",
      },
      body: bytes,
      redirect: "error",
      signal: AbortSignal.timeout(UPLOAD_TIMEOUT_MS),
    }).catch((error: unknown) => {
      throw new ChannelSendError(`Slack file upload failed: ${errorMessage(error)}`, {
        code: "channel.network",
        cause: error,
      });
    });
    await response.body?.cancel();
    if (response.status === 429) {
      const seconds = Number(response.headers.get("retry-after")) || 1;
      throw new ChannelSendError(`Slack rate limit on the file upload: retry after ${seconds} s`, {
        code: "channel.rate_limited",
        retryAfterMs: seconds * 1000,
      });
    }
    if (response.status !== 200) {
      throw new ChannelSendError(`Slack refused the file upload (HTTP ${response.status})`, {
        code: "channel.slack.upload_failed",
        permanent: response.status >= 400 && response.status < 500,
      });
    }
  }

  /** Replies go into the thread; in channels a reply starts a thread under the triggering message. */
  private threadTsFor(target: ReplyTarget): string | undefined {
    if (target.threadId) return target.threadId;
    if (!target.replyToMessageId || target.chatId.startsWith("D")) return undefined;
    return target.replyToMessageId.split(":").pop();
  }

  private async post(
    channel: string,
    threadTs: string | undefined,
    part: RenderedPart,
    buttons: OutboundMessage["buttons"],
    plain: boolean,
  ): Promise<string> {
    const base = { channel, ...(threadTs ? { thread_ts: threadTs } : {}), unfurl_links: false };
    try {
      const result = await formattedOrPlain(
        () =>
          this.app.client.chat.postMessage({
            ...base,
            text: part.formatted,
            mrkdwn: !plain,
            ...(buttons ? { blocks: blocksFor(part.formatted, buttons) } : {}),
          }),
        () => {
          this.deps.logger.warn({ channel: this.name }, "Slack rejected the blocks; resending as plain text");
          return this.app.client.chat.postMessage({
            ...base,
            text: withChoices(part.plain, buttons),
            mrkdwn: false,
          });
        },
        isFormattingRejection,
      );
      return String(result.ts);
    } catch (error) {
      throw toSendError(error);
    }
  }

  private async update(
    channel: string,
    ts: string,
    part: RenderedPart,
    buttons: OutboundMessage["buttons"],
    plain: boolean,
  ): Promise<void> {
    try {
      await formattedOrPlain(
        () =>
          this.app.client.chat.update({
            channel,
            ts,
            text: part.formatted,
            ...(buttons ? { blocks: blocksFor(part.formatted, buttons) } : { blocks: [] }),
          }),
        () =>
          this.app.client.chat.update({ channel, ts, text: withChoices(part.plain, buttons), blocks: [] }),
        // For a plain reply every refusal gets one retry with the fallback text, not only a blocks rejection.
        (error) => plain || isFormattingRejection(error),
      );
    } catch (error) {
      throw toSendError(error);
    }
  }

  async edit(target: ReplyTarget, messageId: string, message: OutboundMessage): Promise<void> {
    const [part] = renderParts(message.text, LIMIT, (text) => renderSlack(text, message.format));
    if (part) await this.update(target.chatId, messageId, part, message.buttons, message.format === "plain");
  }

  async download(attachment: Attachment): Promise<Buffer> {
    if (!attachment.url)
      throw new MagpieError("channel.slack.no_url", `Slack file ${attachment.id} has no download URL.`);
    // Private Slack file URLs need the bot token (files:read scope): it goes to Slack's file host only.
    return this.files.download(attachment.url);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.socketReceiver?.stop();
    this.status$.set("stopped");
  }

  /** Socket Mode answered no ping within the liveness limit: a fresh socket (HTTP events have no cycle). */
  reconnect(reason: string): void {
    this.socketReceiver?.reconnect(reason);
  }

  status(): ChannelStatus {
    return this.status$.get();
  }
}

/** Plain text is escaped too: an unescaped "<!channel>" from the model would ping a whole channel. */
function renderSlack(markdown: string, format: OutboundMessage["format"]): string {
  return format === "plain" ? escapeText(markdown, "slack-mrkdwn") : renderMarkdown(markdown, "slack-mrkdwn");
}

/** Section blocks (3000 characters each) for the text, then one actions block per button row. */
function blocksFor(mrkdwn: string, rows: NonNullable<OutboundMessage["buttons"]>): KnownBlock[] {
  const sections = chunkMarkdown(mrkdwn, SECTION_LIMIT).map(
    (text) => ({ type: "section", text: { type: "mrkdwn", text } }) as KnownBlock,
  );
  const actions = rows.map(
    (row, rowIndex) =>
      ({
        type: "actions",
        block_id: `magpie-row-${rowIndex}`,
        elements: row.map((button, index) => ({
          type: "button",
          action_id: `magpie-${rowIndex}-${index}`,
          text: { type: "plain_text", text: button.label.slice(0, 75) },
          value: button.id,
          ...(button.style ? { style: button.style } : {}),
        })),
      }) as KnownBlock,
  );
  return [...sections, ...actions].slice(0, 50);
}

/** Without blocks, the choices are listed so the user still sees them. */
function withChoices(markdown: string, buttons: OutboundMessage["buttons"]): string {
  const text = escapeText(markdown, "slack-mrkdwn");
  if (!buttons || buttons.length === 0) return text;
  return `${text}\n\n${buttons
    .flat()
    .map((button) => `• ${button.label}`)
    .join("\n")}`;
}

function unescapeSlack(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function kindOf(mime: string | undefined): AttachmentKind {
  if (!mime) return "file";
  if (mime.startsWith("image/")) return "image";
  if (mime.startsWith("audio/")) return "audio";
  if (mime.startsWith("video/")) return "video";
  return "file";
}

function isFormattingRejection(error: unknown): boolean {
  const reason = (error as SlackApiError).data?.error ?? "";
  return reason === "invalid_blocks" || reason === "invalid_blocks_format";
}

/** Maps a Web API failure onto the outbox's retry contract. */
function toSendError(error: unknown): ChannelSendError {
  if (error instanceof ChannelSendError) return error;
  const apiError = error as SlackApiError;
  switch (apiError.code) {
    case "slack_webapi_rate_limited_error":
      return new ChannelSendError(`Slack rate limit: retry after ${apiError.retryAfter ?? 1} s`, {
        code: "channel.rate_limited",
        retryAfterMs: (apiError.retryAfter ?? 1) * 1000,
        cause: error,
      });
    case "slack_webapi_platform_error": {
      const reason = apiError.data?.error ?? "unknown";
      const transient =
        reason === "internal_error" ||
        reason === "fatal_error" ||
        reason === "service_unavailable" ||
        reason === "request_timeout";
      return new ChannelSendError(`Slack refused the message (${reason})`, {
        code: "channel.slack.refused",
        permanent: !transient,
        cause: error,
      });
    }
    case "slack_webapi_http_error": {
      const status = apiError.statusCode ?? 0;
      return new ChannelSendError(`Slack HTTP error ${status}`, {
        code: "channel.slack.http_error",
        permanent: status >= 400 && status < 500,
        cause: error,
      });
    }
    default:
      return new ChannelSendError(`Slack unreachable: ${errorMessage(error)}`, {
        code: "channel.network",
        cause: error,
      });
  }
}

/** Factory used by channels/index.ts. */
export function createSlackChannel(deps: ChannelDeps): ChannelAdapter {
  return new SlackChannel(deps);
}
