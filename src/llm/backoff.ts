/**
 * Back-off between retries of one model. The openai SDK retries the same statuses with the same delays, but
 * the chain does it itself (the SDK client gets `maxRetries: 0`), because in openai 6.x `retryRequest`
 * (node_modules/openai/client.js) sleeps with a plain setTimeout that the turn's abort signal cannot cut
 * short (/stop would wait out a long `retry-after`), obeys any `retry-after` however long (an hour on a
 * 429 with a fallback configured), and never retries a stream that failed after its headers.
 */

/** A `retry-after` longer than this is not waited for: the chain goes on to the next model instead. */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * How long to wait before retry number `retryIndex` (0-based), or null when the provider asks for more than
 * MAX_RETRY_AFTER_MS. Without `retry-after`: 0.5 s doubling up to 8 s, minus up to 25 % jitter (the SDK's).
 */
export function retryDelayMs(retryIndex: number, retryAfterMs?: number, random = Math.random): number | null {
  if (retryAfterMs !== undefined) return retryAfterMs <= MAX_RETRY_AFTER_MS ? retryAfterMs : null;
  const seconds = Math.min(0.5 * 2 ** retryIndex, 8);
  return Math.round(seconds * (1 - random() * 0.25) * 1000);
}

/** Waits `ms`, or less when the signal aborts (then rejects with the signal's reason). */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
