const HOUR_MS = 3_600_000;

/**
 * Back-pressure for events (a trigger's, a session's pin watch): after firing, nothing for `cooldownMs`; at most
 * `max` firings in any rolling window (an hour unless told). It keeps at most `max` timestamps, so a flood costs
 * constant memory: what it refuses is counted by the caller and dropped, never queued.
 */
export class RateGate {
  private readonly fired: number[] = [];
  private start = 0;
  private lastFired: number | null = null;

  constructor(
    private readonly cooldownMs: number,
    private readonly max: number,
    private readonly windowMs: number = HOUR_MS,
  ) {}

  /** Takes a slot at `now` when one is free; false means drop the event. */
  take(now: number): boolean {
    while (this.start < this.fired.length && now - (this.fired[this.start] ?? 0) >= this.windowMs)
      this.start++;
    if (this.start > 1_024) {
      this.fired.splice(0, this.start);
      this.start = 0;
    }
    if (this.lastFired !== null && now - this.lastFired < this.cooldownMs) return false;
    if (this.fired.length - this.start >= this.max) return false;
    this.fired.push(now);
    this.lastFired = now;
    return true;
  }
}
