import {
  ButtonStyle,
  Client,
  ComponentType,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  HTTPError,
  type Interaction,
  type Message,
  Options,
  Partials,
  RateLimitError,
  Routes,
} from "discord.js";
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
import { renderParts } from "./format/chunk.js";
import { hasCaption, readOutboundFile, sendParts } from "./send-parts.js";
import { StatusTracker } from "./status-tracker.js";

const TOKEN_HINT = "Check DISCORD_BOT_TOKEN or channels.discord.token.";
const LIMIT = 2000;
const AUTHENTICATION_FAILED = 4004;
const RATE_LIMIT_WAIT_MS = 1500;
const DISALLOWED_INTENTS = 4014;
/** Discord's attachment hosts (https only). */
const DISCORD_FILE_HOSTS = ["cdn.discordapp.com", "media.discordapp.net"];

interface SentMessage {
  id: string;
}

/** Discord via discord.js: gateway for DMs (Partials.Channel) and guild messages; REST for replies. */
export class DiscordChannel implements ChannelAdapter {
  readonly name = "discord";
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: LIMIT,
    edit: true,
    buttons: true,
    typing: true,
    threads: true,
  };
  private readonly client: Client;
  private readonly status$ = new StatusTracker();
  private readonly token: string;
  private readonly files: PlatformFiles;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: ChannelDeps) {
    const config = deps.config.channels.discord;
    if (!config.token) {
      throw new MagpieError(
        "channel.discord.no_token",
        "Discord is enabled but has no token. Set DISCORD_BOT_TOKEN or channels.discord.token.",
      );
    }
    this.token = config.token;
    this.files = new PlatformFiles({
      platform: "Discord",
      hosts: DISCORD_FILE_HOSTS,
      endpoint: config.apiBase,
    });
    this.client = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.DirectMessages,
        GatewayIntentBits.MessageContent,
      ],
      // Without the Channel partial discord.js drops DMs from channels it has not cached yet.
      partials: [Partials.Channel],
      rest: {
        ...(config.apiBase ? { api: config.apiBase.replace(/\/$/, "") } : {}),
        // Short waits (bucket pacing) happen inside discord.js; a longer 429 goes back to the outbox with
        // retryAfterMs instead of blocking every send behind it.
        rejectOnRateLimit: (limit) => limit.retryAfter > RATE_LIMIT_WAIT_MS,
        retries: 1,
      },
      allowedMentions: { parse: [] },
      // Magpie reads everything it needs from each event: no message, presence or reaction caches that grow
      // for days on a small box.
      makeCache: Options.cacheWithLimits({
        ...Options.DefaultMakeCacheSettings,
        MessageManager: 0,
        PresenceManager: 0,
        ReactionManager: 0,
        GuildEmojiManager: 0,
        GuildStickerManager: 0,
        VoiceStateManager: 0,
      }),
    });
  }

  async start(sink: InboundSink): Promise<void> {
    const client = this.client;
    client.on(Events.MessageCreate, (message) => {
      this.onMessage(message, sink).catch((error) =>
        this.deps.logger.error(
          { channel: this.name, err: errorMessage(error) },
          "discord message handling failed",
        ),
      );
    });
    client.on(Events.InteractionCreate, (interaction) => {
      this.onInteraction(interaction, sink).catch((error) =>
        this.deps.logger.error(
          { channel: this.name, err: errorMessage(error) },
          "discord button handling failed",
        ),
      );
    });
    client.on(Events.ShardReconnecting, () =>
      this.status$.set("reconnecting", "gateway connection lost; reconnecting"),
    );
    // Every gateway dispatch is a completed receive; between them the heartbeat acks count (see `status`).
    client.on(Events.Raw, () => {
      if (!this.stopped) this.status$.received();
    });
    client.on(Events.ShardResume, () => this.status$.set("connected"));
    client.on(Events.ShardReady, () => this.status$.set("connected"));
    client.on(Events.ShardError, (error) =>
      this.deps.logger.warn({ channel: this.name, err: errorMessage(error) }, "discord gateway error"),
    );

    client.on(Events.ShardDisconnect, (event) => {
      this.status$.set("failed", closeDetail(event.code));
    });
    await this.connect(0);
  }

  /** Logs in; a refused token throws, network trouble retries in the background with back-off. */
  private async connect(attempt: number): Promise<void> {
    try {
      await this.login();
      this.status$.set("connected");
    } catch (error) {
      if (error instanceof MagpieError) {
        this.status$.set("failed", error.message);
        throw error;
      }
      if (this.stopped) return;
      this.status$.set("reconnecting", `Cannot connect to Discord: ${errorMessage(error)}`);
      this.deps.logger.warn(
        { channel: this.name, err: errorMessage(error) },
        "discord unreachable, retrying",
      );
      this.retryTimer = setTimeout(() => {
        this.connect(attempt + 1).catch(() => undefined);
      }, backoffDelay(attempt));
    }
  }

  /** Resolves once the client is ready; rejects with a MagpieError when Discord refuses the token or intents. */
  private async login(): Promise<void> {
    const client = this.client;
    let onReady = () => {};
    let onDisconnect = (_event: { code: number }) => {};
    const ready = new Promise<void>((resolve, reject) => {
      onReady = () => resolve();
      onDisconnect = (event) => {
        const code =
          event.code === AUTHENTICATION_FAILED
            ? "channel.discord.unauthorized"
            : "channel.discord.gateway_closed";
        reject(new MagpieError(code, closeDetail(event.code)));
      };
      client.once(Events.ClientReady, onReady);
      client.once(Events.ShardDisconnect, onDisconnect);
    });
    try {
      await Promise.race([client.login(this.token), ready]);
      await ready;
    } catch (error) {
      if (error instanceof MagpieError) throw error;
      if ((error as { code?: string }).code === "TokenInvalid") {
        throw new MagpieError(
          "channel.discord.unauthorized",
          `Discord rejected the token (401). ${TOKEN_HINT}`,
          {
            cause: error,
          },
        );
      }
      throw error;
    } finally {
      client.off(Events.ClientReady, onReady);
      client.off(Events.ShardDisconnect, onDisconnect);
    }
  }

  private async onMessage(message: Message, sink: InboundSink): Promise<void> {
    if (message.author.bot || message.system) return;
    // Gateway delivery has no ack: the inbox's (channel, messageId) uniqueness absorbs redeliveries.
    await sink.message(this.normalize(message));
  }

  private normalize(message: Message): InboundMessage {
    const botId = this.client.user?.id ?? "";
    const channel = message.channel;
    const inThread = channel.isThread();
    // regex-dynamic: the bot's own user id, a snowflake of digits
    const mentionPattern = new RegExp(`<@!?${botId}>`, "g");
    const referenced = message.reference?.messageId;
    const repliedAuthor = message.mentions.repliedUser?.id;
    return {
      channel: this.name,
      chatId: inThread ? (channel.parentId ?? channel.id) : message.channelId,
      threadId: inThread ? channel.id : undefined,
      guildId: message.guildId ?? undefined,
      messageId: message.id,
      userId: message.author.id,
      userName: message.author.globalName ?? message.author.username,
      text: message.content.replace(mentionPattern, `@${this.client.user?.username ?? "bot"}`).trim(),
      isDirect: message.guildId === null,
      mentionsBot: message.mentions.users.has(botId) || repliedAuthor === botId,
      replyTo: referenced
        ? { messageId: referenced, userId: repliedAuthor, fromBot: repliedAuthor === botId }
        : undefined,
      attachments: [...message.attachments.values()].map((attachment) => ({
        kind: kindOf(attachment.contentType),
        id: attachment.id,
        name: attachment.name,
        mime: attachment.contentType ?? undefined,
        size: attachment.size,
        url: attachment.url,
      })),
      receivedAt: message.createdTimestamp,
      raw: message,
    };
  }

  private async onInteraction(interaction: Interaction, sink: InboundSink): Promise<void> {
    if (!interaction.isButton() || interaction.user.bot) return;
    await interaction.deferUpdate().catch(() => undefined);
    const channel = interaction.channel;
    const inThread = channel?.isThread() ?? false;
    await sink.buttonPressed({
      channel: this.name,
      chatId:
        inThread && channel?.isThread()
          ? (channel.parentId ?? interaction.channelId ?? "")
          : (interaction.channelId ?? ""),
      threadId: inThread ? (interaction.channelId ?? undefined) : undefined,
      userId: interaction.user.id,
      userName: interaction.user.globalName ?? interaction.user.username,
      isDirect: interaction.guildId === null,
      buttonId: interaction.customId,
      messageId: interaction.message.id,
    });
  }

  async send(target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult> {
    const channelId = target.threadId ?? target.chatId;
    return sendParts(
      target,
      message,
      {
        limit: LIMIT,
        render: (text) => text,
        markup: components,
        edit: (messageId, part, buttons) =>
          this.call(() =>
            this.client.rest.patch(Routes.channelMessage(channelId, messageId), {
              body: messageBody(part.formatted, buttons),
            }),
          ),
        post: async (part, buttons, first) => {
          const body = { ...messageBody(part.formatted, buttons), ...referenceTo(target, first) };
          const sent = (await this.call(() =>
            this.client.rest.post(Routes.channelMessages(channelId), { body }),
          )) as SentMessage;
          return sent.id;
        },
        captionLimit: LIMIT,
        // One message with the file as its attachment (multipart: payload_json + files[0]); Discord shows
        // images inline, so a photo needs nothing else.
        postFile: async (file, caption, buttons, first) => {
          const data = await readOutboundFile(file);
          const body = {
            ...messageBody(hasCaption(caption) ? caption.formatted : "", buttons),
            ...referenceTo(target, first),
            attachments: [{ id: 0, filename: file.name }],
          };
          const files = [{ name: file.name, data, contentType: file.mime }];
          const sent = (await this.call(() =>
            this.client.rest.post(Routes.channelMessages(channelId), { body, files }),
          )) as SentMessage;
          return sent.id;
        },
      },
      progress,
    );
  }

  async edit(target: ReplyTarget, messageId: string, message: OutboundMessage): Promise<void> {
    const [part] = renderParts(message.text, LIMIT, (text) => text);
    const body = messageBody(part?.formatted ?? "", message.buttons && components(message.buttons));
    await this.call(() =>
      this.client.rest.patch(Routes.channelMessage(target.threadId ?? target.chatId, messageId), { body }),
    );
  }

  async typing(target: ReplyTarget): Promise<void> {
    await this.client.rest
      .post(Routes.channelTyping(target.threadId ?? target.chatId))
      .catch((error) =>
        this.deps.logger.debug({ channel: this.name, err: errorMessage(error) }, "typing failed"),
      );
  }

  async download(attachment: Attachment): Promise<Buffer> {
    if (!attachment.url)
      throw new MagpieError("channel.discord.no_url", `Discord attachment ${attachment.id} has no URL.`);
    // CDN URLs are signed: no bot token goes with them, but only Discord's own hosts are contacted.
    return this.files.download(attachment.url);
  }

  /** Runs a REST call, mapping failures onto the outbox's retry contract. */
  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof RateLimitError) {
        throw new ChannelSendError(`Discord rate limit: retry after ${error.retryAfter} ms`, {
          code: "channel.rate_limited",
          retryAfterMs: Math.max(1, error.retryAfter),
          cause: error,
        });
      }
      if (error instanceof DiscordAPIError) {
        throw new ChannelSendError(
          `Discord refused the message (${error.status} / ${error.code}): ${error.message}`,
          {
            code: "channel.discord.refused",
            permanent: error.status >= 400 && error.status < 500,
            cause: error,
          },
        );
      }
      if (error instanceof HTTPError) {
        throw new ChannelSendError(`Discord server error (${error.status})`, {
          code: "channel.discord.server_error",
          cause: error,
        });
      }
      throw new ChannelSendError(`Discord unreachable: ${errorMessage(error)}`, {
        code: "channel.network",
        cause: error,
      });
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.client.destroy().catch(() => undefined);
    this.status$.set("stopped");
  }

  /** The gateway acked no heartbeat within the liveness limit: a new gateway session (discord.js's own zombie check missed it). */
  reconnect(reason: string): void {
    if (this.stopped) return;
    this.status$.set("reconnecting", reason);
    this.deps.logger.warn({ channel: this.name, reason }, "discord gateway silent; logging in again");
    this.client
      .destroy()
      .catch(() => undefined)
      .then(() => (this.stopped ? undefined : this.connect(0)))
      .catch(() => undefined);
  }

  status(): ChannelStatus {
    const status = this.status$.get();
    // discord.js keeps when each shard's last acknowledged heartbeat was sent.
    let heartbeat = 0;
    for (const shard of this.client.ws.shards.values())
      heartbeat = Math.max(heartbeat, shard.lastPingTimestamp);
    return heartbeat > (status.lastReceiveAt ?? 0) ? { ...status, lastReceiveAt: heartbeat } : status;
  }
}

/** Why the gateway closed for good, and what to do about it. */
function closeDetail(code: number): string {
  if (code === AUTHENTICATION_FAILED)
    return `Discord rejected the token (${AUTHENTICATION_FAILED}). ${TOKEN_HINT}`;
  if (code === DISALLOWED_INTENTS) {
    return "Discord refused the intents (4014): enable the Message Content intent for the bot in the Discord developer portal.";
  }
  return `Discord closed the gateway (${code}) and will not reconnect.`;
}

/** Replies to the triggering message with the first part only; a deleted original is no error. */
function referenceTo(target: ReplyTarget, first: boolean): Record<string, unknown> {
  return first && target.replyToMessageId
    ? { message_reference: { message_id: target.replyToMessageId, fail_if_not_exists: false } }
    : {};
}

/** A message body that pings nobody, with the button rows when there are any. */
function messageBody(content: string, buttons: unknown[] | undefined): Record<string, unknown> {
  return { content, allowed_mentions: { parse: [] }, ...(buttons ? { components: buttons } : {}) };
}

function components(rows: NonNullable<OutboundMessage["buttons"]>): unknown[] {
  // Discord allows at most 5 rows of 5 buttons.
  return rows.slice(0, 5).map((row) => ({
    type: ComponentType.ActionRow,
    components: row.slice(0, 5).map((button) => ({
      type: ComponentType.Button,
      style:
        button.style === "danger"
          ? ButtonStyle.Danger
          : button.style === "primary"
            ? ButtonStyle.Primary
            : ButtonStyle.Secondary,
      label: button.label.slice(0, 80),
      custom_id: button.id.slice(0, 100),
    })),
  }));
}

function kindOf(contentType: string | null): AttachmentKind {
  if (!contentType) return "file";
  if (contentType.startsWith("image/")) return "image";
  if (contentType.startsWith("audio/")) return "audio";
  if (contentType.startsWith("video/")) return "video";
  return "file";
}

/** Factory used by channels/index.ts. */
export function createDiscordChannel(deps: ChannelDeps): ChannelAdapter {
  return new DiscordChannel(deps);
}
