import type { Role } from "./identity.js";
import type { BudgetScope } from "./spend.js";
import type { UntrustedSource } from "./turn-provenance.js";
import type { InboundMessage, ReplyTarget } from "./types.js";

/** A chat turn's answer, just queued for delivery. */
export interface AnsweredTurn {
  sessionKey: string;
  agent: string;
  target: ReplyTarget;
  reply: string;
  /** The messages the turn answered. */
  messages: InboundMessage[];
  /** The inbox item the reply belongs to (the last message's). */
  inboxId: number;
  budget: BudgetScope;
}

/** Recalled text with the untrusted sources it carries (memories stored by a tainted turn). */
export interface RecalledText {
  text: string;
  untrusted: readonly UntrustedSource[];
}

/** Extension points of the agent turn (memory recall, conversation memory). */
export interface AgentHooks {
  /**
   * Text added to the system prompt before a turn (e.g. recalled memories); null for nothing. `role` is the
   * sender's: a guest's turn must recall none of the owners' memories.
   */
  recall?(input: {
    sessionKey: string;
    agent: string;
    text: string;
    role: Role;
  }): Promise<string | RecalledText | null>;
  /** Called after history was compacted into `summary`; `role` is who the session's turns ran for. */
  onCompacted?(input: { sessionKey: string; agent: string; summary: string; role: Role }): Promise<void>;
  /** Called after a chat turn's reply was queued (voice replies); runs in the background, a failure is logged. */
  afterReply?(turn: AnsweredTurn): Promise<void>;
}
