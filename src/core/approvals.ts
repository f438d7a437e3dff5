import type { SenderIdentity } from "./identity.js";
import type { ReplyTarget } from "./types.js";

export type ApprovalDecision = "approved" | "denied" | "timeout";

export interface ApprovalRequest {
  sessionKey: string;
  /** The chat the request is posted to (the approver's). */
  target: ReplyTarget;
  /** Whose authority the action runs under; only an owner of the target's channel may decide. */
  approver: SenderIdentity;
  tool: string;
  /** The exact action shown to the owner (command line, path, URL …). */
  action: string;
  /** Why approval is needed (rule ID, risk). */
  reason: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * Asks again under this id (a resumed turn's pending approval, DESIGN.md → Durable turns): the request is
   * reopened, and a decision a person already made on it is returned without asking — decided once.
   */
  id?: string;
  /** Hears the request's id once it is stored, before the wait (the step journal keeps it). */
  onAsked?(id: string): void;
}

/** A question put to a person in chat (`ask_question`). */
export interface QuestionRequest {
  sessionKey: string;
  /** The chat it is asked in. */
  target: ReplyTarget;
  /** Who may answer: this person; when an owner, any owner of the channel. */
  askedOf: SenderIdentity;
  prompt: string;
  options: Array<{ id: string; label: string }>;
  suggestedAnswer?: string;
  allowCustom: boolean;
  timeoutMs: number;
  signal?: AbortSignal;
}

export type QuestionAnswer =
  | { answer: string; option_id?: string }
  | { answer: null; reason: "timeout" | "cancelled" };

/**
 * Pauses a turn until a person answers (DESIGN.md: approvals and questions are one mechanism): an owner approves
 * or denies an action (timeout = deny), or someone answers a question.
 */
export interface ApprovalGate {
  request(request: ApprovalRequest): Promise<ApprovalDecision>;
  /** Asks a question in chat; absent where no chat flow is wired. */
  ask?(request: QuestionRequest): Promise<QuestionAnswer>;
}

/** Used when no approval flow is wired: everything that asks is denied. */
export const denyAllApprovals: ApprovalGate = { request: async () => "denied" };
