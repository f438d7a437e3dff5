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
}

/** Pauses a turn until the owner approves or denies an action (timeout = deny). */
export interface ApprovalGate {
  request(request: ApprovalRequest): Promise<ApprovalDecision>;
}

/** Used when no approval flow is wired: everything that asks is denied. */
export const denyAllApprovals: ApprovalGate = { request: async () => "denied" };
