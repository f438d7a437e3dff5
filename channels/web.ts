import { z } from "zod";
import type {
  AcceptResult,
  Button,
  ChannelAdapter,
  ChannelCapabilities,
  ChannelStatus,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
  SendProgress,
  SendResult,
} from "../src/core/types.js";
import type { KvRepository } from "../src/store/kv.js";

/** One line of a web chat as the dashboard shows it. */
const webChatEntrySchema = z.object({
  id: z.string(),
  from: z.enum(["owner", "magpie"]),
  text: z.string(),
  at: z.number(),
  buttons: z
    .array(
      z.array(
        z.object({ id: z.string(), label: z.string(), style: z.enum(["primary", "danger"]).optional() }),
      ),
    )
    .optional(),
});

export interface WebChatEntry {
  id: string;
  from: "owner" | "magpie";
  text: string;
  at: number;
  buttons?: Button[][];
}

/** The one chat the dashboard user has with Magpie (its session key is `web:dashboard`). */
export const WEB_CHAT_ID = "dashboard";
export const WEB_USER_ID = "dashboard";
/** The chat's transcript is kept in `kv` under this prefix, the newest `TRANSCRIPT_LIMIT` lines. */
export const TRANSCRIPT_KEY_PREFIX = "web:transcript:";
const TRANSCRIPT_LIMIT = 200;
/**
 * What one line of the transcript shows: the full text stays in the session's history and the inbox. Without a
 * cap a 1 MB message made every later message re-read and re-write megabytes (200 of them: seconds a message).
 */
const LINE_CHARS = 20_000;
/** The whole transcript stays under this many characters: the oldest lines go first. */
const TRANSCRIPT_CHARS = 1_000_000;

/** A line's text cut to what the transcript shows, saying how much was left out. */
function shownText(text: string): string {
  if (text.length <= LINE_CHARS) return text;
  return `${text.slice(0, LINE_CHARS)}\n… (${(text.length - LINE_CHARS).toLocaleString("en")} more characters, kept in the session's history)`;
}

/**
 * Webchat: the dashboard's chat with Magpie, a channel like the others. Messages come in only through
 * `receive`/`press`, which only the signed-in dashboard calls; its sender is an owner (src/security/authority.ts).
 * Replies arrive through the outbox like any channel's, and land in a transcript stored in the database, so
 * they survive a reload or a restart; streamed drafts are edits of one line.
 */
export class WebChannel implements ChannelAdapter {
  readonly name = "web";
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: 100_000,
    edit: true,
    buttons: true,
    typing: false,
    threads: false,
  };
  private sink: InboundSink | null = null;
  private state: ChannelStatus = { state: "starting", since: Date.now() };
  private counter = 0;
  /** The transcripts read or written by this process, so a message doesn't re-parse the stored JSON. */
  private readonly cache = new Map<string, WebChatEntry[]>();

  constructor(
    private readonly kv: KvRepository,
    private readonly now: () => number = Date.now,
  ) {}

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    this.state = { state: "connected", since: this.now() };
  }

  /** A message typed in the dashboard; `messageId` comes from the form, so a resent form is a duplicate. */
  async receive(text: string, messageId: string, chatId = WEB_CHAT_ID): Promise<AcceptResult> {
    if (!this.sink || this.state.state !== "connected")
      return { status: "rejected", reason: "web chat stopped" };
    const at = this.now();
    const lineId = `in-${messageId}`;
    // Shown before the turn can answer; a resent form finds its line already there.
    if (!this.transcript(chatId).some((entry) => entry.id === lineId)) {
      this.append(chatId, { id: lineId, from: "owner", text, at });
    }
    const result = await this.sink.message({
      channel: this.name,
      chatId,
      messageId,
      userId: WEB_USER_ID,
      userName: "dashboard",
      text,
      isDirect: true,
      mentionsBot: true,
      attachments: [],
      receivedAt: at,
    });
    if (result.status === "denied" || result.status === "rejected") {
      this.append(chatId, {
        id: `refused-${messageId}`,
        from: "magpie",
        text: `Not taken: ${result.reason}`,
        at,
      });
    }
    return result;
  }

  /** A button pressed in the dashboard's chat (an approval's Approve, a question's option). */
  async press(buttonId: string, chatId = WEB_CHAT_ID): Promise<void> {
    await this.sink?.buttonPressed({
      channel: this.name,
      chatId,
      userId: WEB_USER_ID,
      userName: "dashboard",
      isDirect: true,
      buttonId,
    });
  }

  async send(target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult> {
    if (message.editMessageId) {
      await this.edit(target, message.editMessageId, message);
      return { messageIds: [message.editMessageId] };
    }
    // One part: a retry after it was stored doesn't store it twice.
    const id = `out-${this.now()}-${++this.counter}`;
    if ((progress?.partsSent ?? 0) === 0) {
      const file = message.file ? `\n[${message.file.kind}: ${message.file.name}]` : "";
      this.append(target.chatId, {
        id,
        from: "magpie",
        text: `${message.text}${file}`,
        at: this.now(),
        ...(message.buttons ? { buttons: message.buttons } : {}),
      });
      progress?.onPartSent(0, id);
    }
    return { messageIds: [id] };
  }

  async edit(target: ReplyTarget, messageId: string, message: OutboundMessage): Promise<void> {
    const entries = this.transcript(target.chatId);
    const entry = entries.find((candidate) => candidate.id === messageId);
    if (!entry) return;
    entry.text = shownText(message.text);
    if (message.buttons) entry.buttons = message.buttons;
    else delete entry.buttons;
    this.save(target.chatId, entries);
  }

  /** The chat's lines, oldest first. */
  transcript(chatId = WEB_CHAT_ID): WebChatEntry[] {
    const cached = this.cache.get(chatId);
    if (cached) return cached.map((entry) => ({ ...entry }));
    const stored = this.kv.get(TRANSCRIPT_KEY_PREFIX + chatId, z.array(webChatEntrySchema)) ?? [];
    this.cache.set(chatId, stored);
    return stored.map((entry) => ({ ...entry }));
  }

  status(): ChannelStatus {
    return this.state;
  }

  async stop(): Promise<void> {
    this.sink = null;
    this.state = { state: "stopped", since: this.now() };
  }

  private append(chatId: string, entry: WebChatEntry): void {
    this.save(chatId, [...this.transcript(chatId), { ...entry, text: shownText(entry.text) }]);
  }

  /** Keeps the newest lines within both limits, in the database and in the cache. */
  private save(chatId: string, entries: WebChatEntry[]): void {
    let kept = entries.slice(-TRANSCRIPT_LIMIT);
    let chars = kept.reduce((sum, line) => sum + line.text.length, 0);
    while (chars > TRANSCRIPT_CHARS && kept.length > 1) {
      chars -= kept[0]!.text.length;
      kept = kept.slice(1);
    }
    this.kv.set(TRANSCRIPT_KEY_PREFIX + chatId, kept);
    this.cache.set(chatId, kept);
  }
}
