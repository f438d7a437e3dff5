const HOUR_MS = 3_600_000;

/**
 * A trigger's back-pressure: after firing, nothing for `cooldownSecs`; at most `maxPerHour` firings in any
 * rolling hour. It keeps at most `maxPerHour` timestamps, so a flood costs constant memory: what it refuses is
 * counted by the caller and dropped, never queued.
 */
export class RateGate {
  private readonly fired: number[] = [];
  private start = 0;
  private lastFired: number | null = null;

  constructor(
    private readonly cooldownMs: number,
    private readonly maxPerHour: number,
  ) {}

  /** Takes a slot at `now` when one is free; false means drop the event. */
  take(now: number): boolean {
    while (this.start < this.fired.length && now - (this.fired[this.start] ?? 0) >= HOUR_MS) this.start++;
    if (this.start > 1_024) {
      this.fired.splice(0, this.start);
      this.start = 0;
    }
    if (this.lastFired !== null && now - this.lastFired < this.cooldownMs) return false;
    if (this.fired.length - this.start >= this.maxPerHour) return false;
    this.fired.push(now);
    this.lastFired = now;
    return true;
  }
}
