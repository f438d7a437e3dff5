import type { ChainEntry } from "./chain-entries.js";

/** One entry the chain tried (or skipped) before it gave up on it. */
export interface ChainAttempt {
  entry: ChainEntry;
  model: string;
  /** The last error from this entry; absent when it was skipped on cooldown. */
  error?: unknown;
  /** Set when the entry was skipped because its key was rejected a little earlier. */
  cooldownLeftMs?: number;
}

/** A model of the chain failed in a way the next model would not fix (400, 404, a stream that broke off). */
export class ModelCallError extends Error {
  readonly code = "llm.model_failed";
  readonly entry: ChainEntry;
  readonly model: string;
  /** The text had started to reach the chat when the stream broke: no retry, no failover. */
  readonly brokenStream: boolean;
  /** Entries that failed before this one (retryable errors, cooldowns). */
  readonly earlier: ChainAttempt[];

  constructor(fields: {
    entry: ChainEntry;
    model: string;
    cause: unknown;
    brokenStream?: boolean;
    earlier?: ChainAttempt[];
  }) {
    const reason = fields.cause instanceof Error ? fields.cause.message : String(fields.cause);
    super(`${fields.model} (${fields.entry.configPath}) failed: ${reason}`, { cause: fields.cause });
    this.name = "ModelCallError";
    this.entry = fields.entry;
    this.model = fields.model;
    this.brokenStream = fields.brokenStream ?? false;
    this.earlier = fields.earlier ?? [];
  }

  get status(): number | undefined {
    return (this.cause as { status?: number } | undefined)?.status;
  }
}

/** Every entry of the chain failed or was cooling down. */
export class AllModelsFailedError extends Error {
  readonly code = "llm.all_failed";
  readonly attempts: ChainAttempt[];

  constructor(attempts: ChainAttempt[]) {
    super(`all configured models failed: ${attempts.map((attempt) => attempt.model).join(", ")}`);
    this.name = "AllModelsFailedError";
    this.attempts = attempts;
  }
}
