/** Normalized message shapes shared by every channel adapter and the core. No library type leaves an adapter. */

import type { Attachment, InboundMessage, OutboundMessage, ReplyTarget } from "../store/message-records.js";

/** The records the store keeps (src/store/message-records.ts), named here as the core's. */
export type {
  Attachment,
  AttachmentKind,
  Button,
  InboundMessage,
  OutboundMessage,
  ReplyReference,
  ReplyTarget,
} from "../store/message-records.js";

/** Durable progress of a multi-part send, so a retry resumes after the last delivered part. */
export interface SendProgress {
  /** Parts already delivered in an earlier attempt (skip these). */
  partsSent: number;
  /** Called after each part is delivered, before the next is attempted. */
  onPartSent(partIndex: number, platformMessageId: string): void;
}

export interface SendResult {
  messageIds: string[];
}

export interface ChannelCapabilities {
  /** Maximum characters of one message on the platform. */
  maxMessageLength: number;
  edit: boolean;
  buttons: boolean;
  typing: boolean;
  threads: boolean;
  /**
   * What one message on the channel is called where it enters a turn as outside content (the rule of two names
   * its sources: "mail from x@y"); absent: "message". A non-owner's `mail` counts as a mail, not a chat guest.
   */
  messageNoun?: "mail";
}

export type ChannelState = "starting" | "connected" | "reconnecting" | "failed" | "stopped";

export interface ChannelStatus {
  state: ChannelState;
  detail?: string;
  since: number;
  /** When the channel last completed a receive cycle (a long poll, a heartbeat ack, a /sync): inbound liveness. */
  lastReceiveAt?: number;
}

export interface ButtonPress {
  channel: string;
  chatId: string;
  threadId?: string;
  userId: string;
  userName: string;
  isDirect: boolean;
  buttonId: string;
  /** Platform id of the message carrying the button. */
  messageId?: string;
}

export type AcceptResult =
  | { status: "accepted"; inboxId: number }
  | { status: "duplicate" }
  | { status: "denied"; reason: string }
  | { status: "rejected"; reason: string };

/** Claims a button press (approvals, choices); returns true when handled. */
export type ButtonHandler = (press: ButtonPress) => Promise<boolean> | boolean;

/** Who writes where, as a message's envelope tells before its body is read. */
export interface InboundSender {
  channel: string;
  chatId: string;
  threadId?: string;
  guildId?: string;
  userId: string;
  userName: string;
  isDirect: boolean;
}

/**
 * What access control would make of a sender, decided without side effects: `allowed` (read the message),
 * `pairing` (an unknown DM sender it would answer with a pairing code, for which the envelope is enough) or
 * `refused`.
 */
export type ScreenVerdict = "allowed" | "pairing" | "refused";

/** What an adapter hands inbound traffic to. `message` resolves after the inbox write: only then acknowledge. */
export interface InboundSink {
  message(inbound: InboundMessage): Promise<AcceptResult>;
  buttonPressed(press: ButtonPress): Promise<void>;
  /**
   * Judges a sender by the envelope before the adapter reads the body (DESIGN.md → Security: a stranger's input
   * is judged by its envelope before its body is parsed). Issues nothing: the adapter hands a `pairing` or
   * `refused` sender's message to `message` without its body, and access control answers it there. Absent: every
   * sender counts as `allowed` (`message` still decides).
   */
  screen?(sender: InboundSender): ScreenVerdict;
}

/** One chat platform behind one interface. */
export interface ChannelAdapter {
  readonly name: string;
  readonly capabilities: ChannelCapabilities;
  start(sink: InboundSink): Promise<void>;
  send(target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult>;
  stop(): Promise<void>;
  status(): ChannelStatus;
  /**
   * Abandons a receive cycle that hangs (the channel reported connected but completed none within its limit) and
   * starts a fresh one; the status says `reconnecting` with `reason` until a cycle completes.
   */
  reconnect?(reason: string): void;
  typing?(target: ReplyTarget): Promise<void>;
  edit?(target: ReplyTarget, messageId: string, message: OutboundMessage): Promise<void>;
  download?(attachment: Attachment): Promise<Buffer>;
}
