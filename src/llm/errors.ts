import { entryBaseUrl } from "./chain-entries.js";
import { AllModelsFailedError, type ChainAttempt, ModelCallError } from "./chain-errors.js";
import { classifyLlmError, classNames } from "./failure-kind.js";

export interface LlmFailure {
  code: string;
  /** Short, clear text for the user. */
  userMessage: string;
  status?: number;
}

export interface LlmErrorContext {
  baseUrl?: string;
  model: string;
  timeoutMs: number;
  /** Config keys to check for a rejected key / an unknown model (default: the primary's). */
  keyHint?: string;
  modelHint?: string;
}

/**
 * Maps an LLM error (401, 404, 429, 5xx, timeout, unreachable, every model of the chain failing …) to a short
 * reply and a code for the log.
 */
export function describeLlmError(error: unknown, context: LlmErrorContext): LlmFailure {
  if (error instanceof AllModelsFailedError) {
    const lines = error.attempts.map((attempt) => `• ${attempt.model}: ${attemptReason(attempt, context)}`);
    // Every model failed for a reason that passes (no key rejected, none skipped on cooldown): an outage.
    const allRetryable = error.attempts.every(
      (attempt) => attempt.error !== undefined && classifyLlmError(attempt.error).kind === "retryable",
    );
    return {
      code: allRetryable ? "llm.all_unavailable" : "llm.all_failed",
      userMessage: `All configured models failed, so I can't answer right now:\n${lines.join("\n")}`,
    };
  }
  if (error instanceof ModelCallError) {
    const entryContext: LlmErrorContext = {
      ...context,
      baseUrl: error.entry.baseUrl,
      model: error.model,
      keyHint: error.entry.keyHint,
      modelHint: error.entry.modelHint,
    };
    if (error.brokenStream) {
      return {
        code: "llm.stream_broken",
        status: error.status,
        userMessage: `The answer from ${error.model} broke off (${shortReason(error.cause, entryContext)}). Please ask again.`,
      };
    }
    const failure = describeLlmError(error.cause, entryContext);
    if (error.earlier.length === 0) return failure;
    const earlier = error.earlier.map((attempt) => `${attempt.model}: ${attemptReason(attempt, context)}`);
    return { ...failure, userMessage: `${failure.userMessage}\n(Tried before it: ${earlier.join("; ")}.)` };
  }
  const where = context.baseUrl ?? "https://api.openai.com/v1";
  const kinds = classNames(error);
  if (kinds.has("APIConnectionTimeoutError")) {
    return {
      code: "llm.timeout",
      userMessage: `The language model did not answer within ${duration(context.timeoutMs)} (llm.timeoutMs). Please try again.`,
    };
  }
  if (kinds.has("APIConnectionError")) {
    return {
      code: "llm.unreachable",
      userMessage: `I couldn't reach the language model at ${where}. Check that it is running and that llm.baseUrl / OPENAI_BASE_URL is right.`,
    };
  }
  if (kinds.has("APIError")) {
    const apiError = error as { status?: number; message: string };
    const status = apiError.status;
    // The SDK starts its messages with the status ("400 context length exceeded"); the reply names it already.
    const detail = firstLine(apiError.message.replace(/^\d{3} /, ""));
    if (status === 401 || status === 403) {
      return {
        code: "llm.auth",
        status,
        userMessage: `The language model provider rejected the API key (${status}). Check ${context.keyHint ?? "OPENAI_API_KEY or llm.apiKey"}.`,
      };
    }
    if (status === 404) {
      return {
        code: "llm.not_found",
        status,
        userMessage: `The model "${context.model}" was not found at ${where} (404). Check ${context.modelHint ?? "MAGPIE_MODEL or llm.model"}.`,
      };
    }
    if (status === 429) {
      return {
        code: "llm.rate_limited",
        status,
        userMessage:
          "The language model provider is rate-limiting or out of quota (429). Please try again in a minute.",
      };
    }
    if (status !== undefined && status >= 500) {
      return {
        code: "llm.server_error",
        status,
        userMessage: `The language model provider had an internal error (HTTP ${status}). Please try again shortly.`,
      };
    }
    if (status === 400) {
      return {
        code: "llm.bad_request",
        status,
        userMessage: `The language model provider refused the request to "${context.model}" (400): ${detail}`,
      };
    }
    return {
      // 408, 409 and an error event inside a stream (no status) pass like a 5xx does.
      code: classifyLlmError(error).kind === "retryable" ? "llm.unavailable" : "llm.error",
      status,
      userMessage: `The language model provider returned an error for "${context.model}"${status ? ` (HTTP ${status})` : ""}: ${detail}`,
    };
  }
  return {
    // A connection dropped outside the SDK's classes (a reset, a body cut off) passes like a refused one.
    code: classifyLlmError(error).kind === "retryable" ? "llm.unavailable" : "llm.error",
    userMessage: `Something went wrong talking to the language model: ${firstLine(error instanceof Error ? error.message : String(error))}`,
  };
}

/** Why one entry of the chain gave no answer, in a few words. */
function attemptReason(attempt: ChainAttempt, context: LlmErrorContext): string {
  const entryContext = { ...context, baseUrl: attempt.entry.baseUrl, model: attempt.model };
  if (attempt.cooldownLeftMs !== undefined) {
    return `skipped, its API key was rejected a moment ago (tried again in ${duration(attempt.cooldownLeftMs)}; check ${attempt.entry.keyHint})`;
  }
  const reason = shortReason(attempt.error, entryContext);
  const status = (attempt.error as { status?: number } | undefined)?.status;
  return status === 401 || status === 403 ? `${reason}, check ${attempt.entry.keyHint}` : reason;
}

/** A few words for one failure: "HTTP 503", "unreachable at …", "no answer within 60 s". */
function shortReason(error: unknown, context: LlmErrorContext): string {
  const kinds = classNames(error);
  if (kinds.has("APIConnectionTimeoutError")) return `no answer within ${duration(context.timeoutMs)}`;
  if (kinds.has("APIConnectionError")) return `unreachable at ${entryBaseUrl(context)}`;
  const status = kinds.has("APIError") ? (error as { status?: number }).status : undefined;
  if (status === 401 || status === 403) return `API key rejected (${status})`;
  if (status === 429) return "rate-limited or out of quota (429)";
  if (status !== undefined) return `HTTP ${status}`;
  if (!kinds.has("APIError") && classifyLlmError(error).kind === "retryable") return "the connection dropped";
  return firstLine(error instanceof Error ? error.message : String(error));
}

function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${Math.round(ms / 100) / 10} s`;
  return `${Math.round(ms / 60_000)} min`;
}

function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
