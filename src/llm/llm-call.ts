/**
 * What one LLM call leaves behind, whatever its kind: a row in the usage ledger (when it was answered and is for
 * someone) and one `llmCall` event. The provider (src/llm/provider.ts) is the one place that writes both; these
 * are the ports it is handed at construction. The core's `SpendScope` and `EventPublisher` fit them as they are.
 */

export type LlmCallKind = "chat" | "embedding" | "transcription" | "vision" | "speech";

export interface LlmUsage {
  kind: LlmCallKind;
  /** The model that answered (a fallback's, when the chain moved on). */
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** No `usage` came back; the counts are estimates. */
  estimated: boolean;
  /** How long the request took (for the event stream; not kept in the ledger). */
  latencyMs?: number;
  /** A fallback entry of the chain answered. */
  fallback?: boolean;
}

/** Who a call is for: what the ledger files it under (a turn's spend scope, or memory's own line). */
export interface CallScope {
  origin: string;
  sessionKey: string;
  historyKey: string;
  /** The turn (`perTurn` budgets); null for calls outside any turn (memory's embeddings). */
  turnId: string | null;
  agent: string | null;
}

/** The usage ledger as the provider writes it: one row per answered (or billed) call; its cost when priced. */
export interface LlmLedgerPort {
  record(scope: CallScope, usage: LlmUsage): number | null;
}

/** The fields of the core's `llmCall` event (src/core/events.ts adds `app` and `at`). */
export interface LlmCallFields {
  turnId?: string;
  origin: string;
  sessionKey?: string;
  kind: LlmCallKind;
  model: string;
  result: "ok" | "error";
  /** The chain answered with a fallback entry. */
  fallback?: boolean;
  promptTokens: number;
  completionTokens: number;
  estimated: boolean;
  costUsd?: number;
  latencyMs: number;
  errorCode?: string;
}

/** Where the provider publishes each call: the app's `EventPublisher` (its `llmCall`). */
export interface LlmCallPublisher {
  llmCall(event: LlmCallFields): void;
}

/** The one logger method the provider reports a failing ledger through. */
export interface ErrorLogger {
  error(fields: Record<string, unknown>, message: string): void;
}

/** What the provider is handed at construction to account for its calls (default: nothing is kept). */
export interface LlmCallPorts {
  events?: LlmCallPublisher;
  ledger?: LlmLedgerPort;
  logger?: ErrorLogger;
}
