import { abortableSleep, retryDelayMs } from "./backoff.js";
import type { ChainEntry } from "./chain-entries.js";
import { AllModelsFailedError, type ChainAttempt, ModelCallError } from "./chain-errors.js";
import { classifyLlmError } from "./failure-kind.js";
import type { ChatModel, CompletionOptions, CompletionRequest, CompletionResult } from "./types.js";

/** What the chain reports as it goes, for the log. */
export type ChainEvent =
  | { type: "retry"; model: string; configPath: string; attempt: number; delayMs: number; error: unknown }
  | { type: "failover"; from: string; to: string; error?: unknown }
  | { type: "cooldown"; model: string; configPath: string; status?: number; untilMs: number };

export interface ModelChainOptions {
  entries: ChainEntry[];
  /**
   * The models the primary entry serves (llm.model, agents' models): a request for one goes to the primary even
   * when a fallback has the same name. Without it, only the fallback's own name picks the fallback.
   */
  primaryModels?: readonly string[];
  /** The endpoint serving an entry; asked once per entry, on first use (the openai SDK loads lazily). */
  connect: (entry: ChainEntry) => Promise<ChatModel>;
  /** Retries per entry for retryable errors (llm.maxRetries). */
  maxRetries: number;
  /** How long an entry whose key was rejected (401/403) is skipped (llm.cooldownSecs). */
  cooldownMs: number;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  onEvent?: (event: ChainEvent) => void;
}

/**
 * The configured models tried in order. Retryable errors are retried on the same model with back-off, then
 * the next model is tried; a rejected key cools its entry down; any other client error ends the call. Only
 * this one request is repeated — the chain keeps nothing between calls but the cooldowns.
 */
export class ModelChain implements ChatModel {
  private readonly endpoints = new Map<ChainEntry, Promise<ChatModel>>();
  /** Cooldown end (ms) per entry and model. */
  private readonly cooldowns = new Map<string, number>();
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly options: ModelChainOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? abortableSleep;
  }

  async complete(request: CompletionRequest, options: CompletionOptions = {}): Promise<CompletionResult> {
    const { signal } = options;
    let emitted = false;
    const onTextDelta = options.onTextDelta
      ? (delta: string) => {
          emitted = true;
          options.onTextDelta?.(delta);
        }
      : undefined;
    const entries = this.resolve(request.model);
    const failed: ChainAttempt[] = [];
    for (const [index, { entry, model }] of entries.entries()) {
      const key = `${entry.configPath}\u0000${model}`;
      const cooldownLeftMs = (this.cooldowns.get(key) ?? 0) - this.now();
      // A single model has nowhere to skip to: it is always tried.
      if (cooldownLeftMs > 0 && entries.length > 1) {
        failed.push({ entry, model, cooldownLeftMs });
        continue;
      }
      const previous = failed.at(-1);
      if (previous)
        this.options.onEvent?.({ type: "failover", from: previous.model, to: model, error: previous.error });
      const endpoint = await this.endpoint(entry);
      for (let attempt = 0; ; attempt++) {
        try {
          const result = await endpoint.complete({ ...request, model }, { signal, onTextDelta });
          this.cooldowns.delete(key);
          return { ...result, answeredBy: { model, fallback: index > 0 } };
        } catch (error) {
          const failure = classifyLlmError(error);
          if (signal?.aborted || failure.kind === "aborted") throw error;
          // Text already reached the chat: a retry or another model would repeat it.
          if (emitted)
            throw new ModelCallError({ entry, model, cause: error, brokenStream: true, earlier: failed });
          if (failure.kind === "fatal")
            throw new ModelCallError({ entry, model, cause: error, earlier: failed });
          if (failure.kind === "auth") {
            if (entries.length > 1) {
              const untilMs = this.now() + this.options.cooldownMs;
              this.cooldowns.set(key, untilMs);
              this.options.onEvent?.({
                type: "cooldown",
                model,
                configPath: entry.configPath,
                status: failure.status,
                untilMs,
              });
            }
            failed.push({ entry, model, error });
            break;
          }
          const delayMs =
            attempt < this.options.maxRetries ? retryDelayMs(attempt, failure.retryAfterMs) : null;
          if (delayMs === null) {
            failed.push({ entry, model, error });
            break;
          }
          this.options.onEvent?.({
            type: "retry",
            model,
            configPath: entry.configPath,
            attempt: attempt + 1,
            delayMs,
            error,
          });
          await this.sleep(delayMs, signal);
        }
      }
    }
    const [only] = failed;
    if (entries.length === 1 && only?.error !== undefined)
      throw new ModelCallError({ entry: only.entry, model: only.model, cause: only.error });
    throw new AllModelsFailedError(failed);
  }

  /**
   * The entries for a request: the primary serves the requested model; repeats of an earlier entry drop out. A
   * request for a fallback's own model (a chat's `/model` choice) starts at that entry — its `baseUrl` and
   * `apiKey` — and the rest of the chain follows, the primary with its own model.
   */
  private resolve(requested: string): Array<{ entry: ChainEntry; model: string }> {
    const { entries, primaryModels = [] } = this.options;
    const chosen = primaryModels.includes(requested)
      ? undefined
      : entries.find((entry) => entry.model === requested);
    const ordered = chosen ? [chosen, ...entries.filter((entry) => entry !== chosen)] : entries;
    const seen = new Set<string>();
    return ordered.flatMap((entry) => {
      const model = entry.model ?? (chosen ? primaryModels[0] : requested);
      if (model === undefined) return [];
      const identity = `${model}\u0000${entry.baseUrl ?? ""}\u0000${entry.apiKey ?? ""}`;
      if (seen.has(identity)) return [];
      seen.add(identity);
      return [{ entry, model }];
    });
  }

  /** The primary entry's client, loaded ahead of the first request (no request is sent). */
  async warm(): Promise<void> {
    const [primary] = this.options.entries;
    if (primary) await this.endpoint(primary);
  }

  private endpoint(entry: ChainEntry): Promise<ChatModel> {
    let endpoint = this.endpoints.get(entry);
    if (!endpoint) {
      endpoint = this.options.connect(entry);
      // A failed load (it should not happen) is tried again next time rather than remembered.
      endpoint.catch(() => this.endpoints.delete(entry));
      this.endpoints.set(entry, endpoint);
    }
    return endpoint;
  }
}
