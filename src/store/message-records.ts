/**
 * The message records the store keeps (inbox, outbox, trace): the normalized shapes every channel adapter and
 * the core share. They live below the core so the store does not import upward (test/import-layers.test.ts);
 * src/core/types.ts and src/core/events.ts re-export them, so the rest of the code names them there.
 */

export type AttachmentKind = "image" | "audio" | "voice" | "video" | "file" | "sticker";

/** Attachment metadata; the bytes are fetched on demand through `ChannelAdapter.download`. */
export interface Attachment {
  kind: AttachmentKind;
  /** Platform handle used by the adapter to download (Telegram file_id, Discord/Slack URL). */
  id: string;
  name?: string;
  mime?: string;
  size?: number;
  url?: string;
}

export interface ReplyReference {
  messageId: string;
  userId?: string;
  text?: string;
  /** True when the replied-to message was written by this bot. */
  fromBot?: boolean;
}

export interface InboundMessage {
  channel: string;
  chatId: string;
  threadId?: string;
  /** The server a group chat belongs to (Discord guild), for access rules that name it. */
  guildId?: string;
  messageId: string;
  userId: string;
  userName: string;
  text: string;
  isDirect: boolean;
  mentionsBot: boolean;
  replyTo?: ReplyReference;
  attachments: Attachment[];
  /** Epoch milliseconds. */
  receivedAt: number;
  /** The platform's original payload; never logged, never persisted. */
  raw?: unknown;
  /**
   * Set on a note put into the session by Magpie itself (a subagent's result, a hardware event), not typed by
   * anyone: the turn it starts has this origin and carries the authority of `userId`, who started the work.
   */
  note?: {
    origin: "spawn" | "event";
    label?: string;
    /** The budgets of the turn that caused the note (a spawn's): its follow-up turn spends from them. */
    budget?: { sessionKey: string; turnId: string };
    /** A spawn's result: whether the work read untrusted content (absent: unknown, counted as untrusted). */
    untrusted?: boolean;
  };
}

/** Where a reply goes. */
export interface ReplyTarget {
  channel: string;
  chatId: string;
  threadId?: string;
  /** Platform id of the message being answered (threads the reply). */
  replyToMessageId?: string;
}

export interface Button {
  /** Opaque callback id handed back in `ButtonPress.buttonId`. */
  id: string;
  label: string;
  style?: "primary" | "danger";
}

export interface OutboundMessage {
  /** Markdown written by the agent; adapters render it to their dialect. */
  text: string;
  /** Rows of inline buttons (approvals, choices). */
  buttons?: Button[][];
  /** `plain` skips Markdown rendering. */
  format?: "markdown" | "plain";
  /** Platform id of a streamed draft to finalize by editing instead of sending anew. */
  editMessageId?: string;
  /**
   * A workspace file sent with the text (guarded and size-checked before it was queued); the adapter reads
   * `path` when it sends, so the outbox item stays small and a retry re-reads it. A `voice` file is a spoken
   * reply: a voice note where the platform has them (Telegram, OGG/Opus), an audio file elsewhere.
   */
  file?: { path: string; name: string; kind: "photo" | "document" | "voice"; mime?: string };
}

/** The outcome stored with an inbound message (DESIGN.md → Every message has an outcome). */
export type MessageOutcome = "answered" | "failed" | "interrupted" | "refused" | "undeliverable";
