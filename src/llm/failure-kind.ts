/**
 * What a failed LLM request means for the model chain: retry the same model, skip a model whose key was
 * rejected, or stop. Works on class names and fields, so the openai SDK is not loaded to ask.
 */
export type FailureKind =
  /** Connection refused/reset, timeout, 408, 409, 429, 5xx, a stream that broke: retry, then fail over. */
  | "retryable"
  /** 401/403: this entry's key is wrong; cool it down and go to the next entry. */
  | "auth"
  /** Any other 4xx (bad request, model not found, context too long): the next model would fail the same way. */
  | "fatal"
  /** The caller stopped the turn. */
  | "aborted";

export interface FailureInfo {
  kind: FailureKind;
  status?: number;
  /** From `retry-after-ms` or `retry-after` (seconds or an HTTP date), when the provider sent one. */
  retryAfterMs?: number;
}

/** Class names along an error's prototype chain — lets us classify openai errors without loading the SDK. */
export function classNames(error: unknown): Set<string> {
  const names = new Set<string>();
  let proto = error && typeof error === "object" ? Object.getPrototypeOf(error) : null;
  while (proto && proto !== Object.prototype) {
    names.add(proto.constructor?.name);
    proto = Object.getPrototypeOf(proto);
  }
  return names;
}

/** Network-level failures outside the SDK's own classes (a streamed body cut off by a reset or a close). */
const NETWORK_FAILURE =
  /terminated|other side closed|socket|ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|fetch failed/i;

/** Classifies an error from a chat-completions request (the same statuses the openai SDK retries itself). */
export function classifyLlmError(error: unknown): FailureInfo {
  const kinds = classNames(error);
  if (kinds.has("APIUserAbortError")) return { kind: "aborted" };
  if (kinds.has("APIConnectionError")) return { kind: "retryable" };
  if (kinds.has("APIError")) {
    const { status, headers } = error as { status?: number; headers?: { get?(name: string): string | null } };
    const retryAfterMs = parseRetryAfter(headers);
    // An error event inside a stream carries no status: a provider-side failure, worth another try.
    if (status === undefined) return { kind: "retryable" };
    if (status === 401 || status === 403) return { kind: "auth", status };
    if (status === 408 || status === 409 || status === 429 || status >= 500)
      return { kind: "retryable", status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
    return { kind: "fatal", status };
  }
  if (error instanceof Error && error.name === "AbortError") return { kind: "aborted" };
  const text =
    error instanceof Error ? `${error.message} ${String((error as { cause?: unknown }).cause ?? "")}` : "";
  const code = (error as { code?: unknown } | null)?.code;
  if (NETWORK_FAILURE.test(text) || (typeof code === "string" && NETWORK_FAILURE.test(code)))
    return { kind: "retryable" };
  return { kind: "fatal" };
}

/** `retry-after-ms` (non-standard, sent by OpenAI) wins over `retry-after`, as in the openai SDK. */
export function parseRetryAfter(
  headers: { get?(name: string): string | null } | undefined,
  now = Date.now(),
): number | undefined {
  if (typeof headers?.get !== "function") return undefined;
  const millis = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(millis)) return Math.max(0, millis);
  const header = headers.get("retry-after");
  if (!header) return undefined;
  const seconds = Number.parseFloat(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/**
 * Turn error codes (src/llm/errors.ts) that mean the models are unreachable for now — connection refused or
 * reset, timeout, 429, 5xx, every model of the chain failing so — rather than refusing this request: a chat turn
 * that ends with one waits the outage out (DESIGN.md → Message flow → Waiting out an outage).
 */
const OUTAGE_CODES: ReadonlySet<string> = new Set([
  "llm.unreachable",
  "llm.timeout",
  "llm.rate_limited",
  "llm.server_error",
  "llm.unavailable",
  "llm.all_unavailable",
]);

/** Whether a turn's error code is an outage (see OUTAGE_CODES). */
export function isOutageCode(code: string | undefined): boolean {
  return code !== undefined && OUTAGE_CODES.has(code);
}
