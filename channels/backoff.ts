/** Exponential back-off with jitter for reconnect attempts: 1 s, 2 s, 4 s … capped at `maxMs`. */
export function backoffDelay(attempt: number, baseMs = 1000, maxMs = 60_000): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt));
  return Math.round(exponential * (0.8 + Math.random() * 0.4));
}
