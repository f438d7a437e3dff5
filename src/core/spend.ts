import type { TurnOrigin } from "./identity.js";

/** What an LLM call is spent on, for the ledger and the budgets (DESIGN.md → Models, failover and spend). */
export interface SpendScope {
  origin: TurnOrigin;
  /** The chat session (a job's or subagent's own key when it has no chat): `perChat` counts by it. */
  sessionKey: string;
  /** The turn's own history key: a job run (`cron:<job>:<run>`), a subagent (`spawn:<id>`) … */
  historyKey: string;
  /** One turn: `perTurn` counts by it. */
  turnId: string;
  agent: string;
}

/**
 * The budgets a turn's LLM calls count against. A turn another one caused (a delegation, a spawned subagent, the
 * follow-up turn its result starts) is handed its cause's scope, so no path opens a fresh budget.
 */
export interface BudgetScope {
  /** `perChat` counts by it: the chat the work started from, or a job run's own key (`cron:<job>:<run>`). */
  sessionKey: string;
  /** `perTurn` counts by it: the message (or job run's turn) everything else came from. */
  turnId: string;
}

export type { LlmCallKind, LlmUsage } from "../llm/llm-call.js";

export type SpendDecision = { allowed: true } | { allowed: false; message: string };

/**
 * The budget check, asked before every LLM call the turn engine makes (a call at or past a cap is not made). What
 * a call used is written to the ledger by the LLM provider itself (src/llm/provider.ts), under the call's scope.
 */
export interface SpendPort {
  beforeCall(scope: SpendScope): SpendDecision;
}
