import { performance } from "node:perf_hooks";

/** What `/healthz` reports about the event loop. */
export interface LoopHealth {
  healthy: boolean;
  /** The longest stall seen lately (ms): the one going on now, or the last one over the limit. */
  blockedMs: number;
}

export interface EventLoopMonitorOptions {
  /** A stall longer than this makes the loop unhealthy (`http.maxEventLoopBlockMs`). */
  maxBlockMs: number;
  /** Told once per stall over the limit, when the loop turns again. */
  onBlock?: (blockedMs: number) => void;
  /** Monotonic milliseconds (tests); a wall clock would count an NTP jump on a Pi without an RTC as a stall. */
  now?: () => number;
}

/**
 * Watches the event loop with a heartbeat timer on it: a beat that comes late by more than `maxBlockMs` means the
 * loop was blocked that long. Nothing on a blocked loop can answer, so the verdict is read when a request is
 * finally served — the stall still going on (the heartbeat hasn't run yet) or one that ended less than
 * `maxBlockMs` ago both count as unhealthy; a client with a timeout counts the hang itself. Recovery: healthy again
 * once the loop has kept time for `maxBlockMs` after the stall.
 */
export class EventLoopMonitor {
  /** Beat interval: a tenth of the limit within 50–500 ms, so a stall is measured to within that much. */
  readonly tickMs: number;
  private readonly now: () => number;
  private lastBeat: number;
  private lastBlockMs = 0;
  private lastBlockEndedAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly options: EventLoopMonitorOptions) {
    this.tickMs = Math.min(500, Math.max(50, Math.floor(options.maxBlockMs / 10)));
    this.now = options.now ?? (() => performance.now());
    this.lastBeat = this.now();
  }

  /** Starts the heartbeat; it never keeps the process alive on its own. */
  start(): this {
    if (this.timer) return this;
    this.lastBeat = this.now();
    this.timer = setInterval(() => this.beat(), this.tickMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The loop's health now (a stopped monitor reports healthy: it has nothing to go on). */
  status(): LoopHealth {
    if (!this.timer) return { healthy: true, blockedMs: 0 };
    const now = this.now();
    const current = this.lateness(now);
    if (current > this.options.maxBlockMs) return { healthy: false, blockedMs: Math.round(current) };
    const recent = now - this.lastBlockEndedAt < this.options.maxBlockMs;
    return { healthy: !recent, blockedMs: recent ? Math.round(this.lastBlockMs) : 0 };
  }

  /** How late the next beat is at `now`: a lower bound of the stall, short of it by at most one tick. */
  private lateness(now: number): number {
    return Math.max(0, now - this.lastBeat - this.tickMs);
  }

  private beat(): void {
    const now = this.now();
    const late = this.lateness(now);
    this.lastBeat = now;
    if (late <= this.options.maxBlockMs) return;
    this.lastBlockMs = late;
    this.lastBlockEndedAt = now;
    this.options.onBlock?.(Math.round(late));
  }
}
