import type { LlmToolSpec, ToolCall } from "../llm/types.js";
import type { ApprovalDecision } from "./approvals.js";
import type { SenderIdentity, TurnOrigin } from "./identity.js";
import type { BudgetScope } from "./spend.js";
import type { TurnApprovals } from "./turn-approvals.js";
import type { TurnSlot } from "./turn-slots.js";
import type { ReplyTarget } from "./types.js";

/** Who is calling a tool and on whose behalf; handed to every tool execution. */
export interface ToolCallContext {
  sessionKey: string;
  agent: string;
  /** Where this turn's replies go (the chat the request came from). */
  target: ReplyTarget;
  userId: string;
  signal: AbortSignal;
  /** Delegation depth: 0 for a user's turn. */
  depth: number;
  /** What started the turn (a user's message, a job, a subagent …). */
  origin: TurnOrigin;
  /** Whose authority the turn carries (owner or guest). */
  sender: SenderIdentity;
  /**
   * True when an owner is there to answer approvals and questions (an owner's own chat turn). False for
   * scheduled jobs, subagents and guests' turns: anything that needs asking is refused there.
   */
  canAsk: boolean;
  /**
   * Who answers this turn's approval requests, and in which chat: the owner in their own chat turn, a job's
   * creator in the chat the job was made from. Absent when no one may be asked (a guest's turn, a subagent).
   */
  approver?: Approver;
  /**
   * Runs `wait` (an approval, a question) without holding a `maxConcurrentTurns` slot; absent outside the
   * turn engine (then the wait just runs).
   */
  whileWaiting?<T>(wait: () => Promise<T>): Promise<T>;
  /** The turn's slot: a delegated turn runs inside it. */
  slot?: TurnSlot;
  /** The upper bound on tools the turn carries (a job creator's set): a delegated turn inherits it. */
  toolLimit?: readonly string[];
  /** The chat is a direct message (for the system prompt of turns started from this one). */
  isDirect?: boolean;
  /** The budgets the turn counts against: a turn it starts (a delegation, a subagent) counts against them too. */
  budget?: BudgetScope;
  /** What the turn remembers about its approvals across calls (denied classes, deletion tallies). */
  turnApprovals?: TurnApprovals;
  /**
   * Whether untrusted content has entered the turn so far (DESIGN.md → Security → Untrusted content); what a
   * tainted turn sends out passes the output filter (src/security/output-filter.ts). Absent: not tainted.
   */
  isTainted?(): boolean;
  /**
   * Hears the call's final text (what the model gets) inside the transaction that records the call's audit and
   * trace rows: the step journal's `result` (DESIGN.md → Durable turns). Absent outside a journaled turn.
   */
  onResult?(output: string): void;
  /** The call's approvals in the step journal (a journaled turn's): asked again under their ids on resume. */
  approvalSteps?: ApprovalSteps;
}

/** A call's approvals as its turn's step journal keeps them (DESIGN.md → Durable turns). */
export interface ApprovalSteps {
  /** The call's next approval in a cut-off run of the turn (its id, and its decision once made). */
  next(): { approvalId: string; decision?: ApprovalDecision } | undefined;
  asked(approvalId: string): void;
  decided(approvalId: string, decision: ApprovalDecision): void;
}

/** A tool call's context as `delegate` and `spawn` hand it to the core: with the calling turn's own tools. */
export interface ToolCaller extends ToolCallContext {
  /** The tools the calling turn may use (its set with every narrowing applied): what it may hand on at most. */
  allowedTools: readonly string[];
}

export interface Approver {
  target: ReplyTarget;
  identity: SenderIdentity;
}

/** The core's view of the tool layer (implemented by `src/tools/registry.ts`). */
export interface ToolRuntime {
  /** Tool names a tool set grants (`default`, `full`, `subagent` or an explicit list). */
  resolveToolSet(toolSet: string | string[]): string[];
  specs(toolNames: string[]): LlmToolSpec[];
  /**
   * The call only reads (its tool's `readOnly`): when it was running as the process died, its resumed turn runs
   * it again. Absent: no call is read-only.
   */
  isReadOnly?(call: ToolCall): boolean;
  /**
   * A call's journaled result, put back into its resumed turn without running it: what it brought into the turn
   * (the rule of two's untrusted sources) counts again. Absent: nothing to note.
   */
  replayed?(call: ToolCall, output: string, context: ToolCallContext): Promise<void>;
  /** Runs one call; never throws — failures come back as text for the model. */
  execute(call: ToolCall, allowedTools: string[], context: ToolCallContext): Promise<string>;
}
