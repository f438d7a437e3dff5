/** Why a running turn was aborted. */
export type AbortReason = "stop" | "shutdown";

export type TurnRunner = (sessionKey: string, inboxIds: number[], signal: AbortSignal) => Promise<void>;

interface SessionLane {
  pending: number[];
  running: boolean;
  controller?: AbortController;
}

/**
 * One turn at a time per session, FIFO; messages that arrive during a turn are collected into the next turn.
 * The global bound on concurrent turns is the turn engine's (its slots), so a turn paused on a question holds
 * no slot while its session stays busy.
 */
export class SessionQueues {
  private readonly lanes = new Map<string, SessionLane>();
  private readonly drains = new Set<Promise<void>>();
  private accepting = true;
  private readonly stopController = new AbortController();

  constructor(
    private readonly runTurn: TurnRunner,
    private readonly onError: (error: unknown, sessionKey: string) => void,
  ) {}

  enqueue(sessionKey: string, inboxId: number): void {
    if (!this.accepting) return;
    const lane = this.lanes.get(sessionKey) ?? { pending: [], running: false };
    this.lanes.set(sessionKey, lane);
    lane.pending.push(inboxId);
    if (!lane.running) this.track(this.drain(sessionKey, lane));
  }

  /** Aborts the running turn of a session; returns false when nothing was running. */
  abort(sessionKey: string, reason: AbortReason = "stop"): boolean {
    const lane = this.lanes.get(sessionKey);
    if (!lane?.controller || lane.controller.signal.aborted) return false;
    lane.controller.abort(reason);
    return true;
  }

  /** Drops messages waiting behind the running turn (used by /stop); returns their inbox ids. */
  dropPending(sessionKey: string): number[] {
    const lane = this.lanes.get(sessionKey);
    if (!lane) return [];
    return lane.pending.splice(0);
  }

  isBusy(sessionKey: string): boolean {
    return this.lanes.get(sessionKey)?.running ?? false;
  }

  /** Sessions with a turn in progress, and messages waiting behind them. */
  stats(): { sessions: number; busy: number; waiting: number } {
    let waiting = 0;
    let busy = 0;
    for (const lane of this.lanes.values()) {
      waiting += lane.pending.length;
      if (lane.running) busy++;
    }
    return { sessions: this.lanes.size, busy, waiting };
  }

  /** Resolves when every queued turn has finished. */
  async idle(): Promise<void> {
    while (this.drains.size > 0) await Promise.allSettled([...this.drains]);
  }

  /** Aborted as shutdown starts: a turn waiting (not running: a parked one) stops waiting at once. */
  get stopping(): AbortSignal {
    return this.stopController.signal;
  }

  /** Stops intake; aborts running turns with reason "shutdown" after `graceMs`. */
  async shutdown(graceMs: number): Promise<void> {
    this.accepting = false;
    this.stopController.abort("shutdown");
    for (const lane of this.lanes.values()) lane.pending.length = 0;
    const timer = setTimeout(() => {
      for (const lane of this.lanes.values()) lane.controller?.abort("shutdown");
    }, graceMs);
    await this.idle();
    clearTimeout(timer);
  }

  private track(drain: Promise<void>): void {
    this.drains.add(drain);
    void drain.finally(() => this.drains.delete(drain));
  }

  private async drain(sessionKey: string, lane: SessionLane): Promise<void> {
    lane.running = true;
    try {
      while (lane.pending.length > 0) {
        // One tick so messages enqueued together (a restart's backlog) are collected into one turn.
        await Promise.resolve();
        const ids = lane.pending.splice(0);
        lane.controller = new AbortController();
        try {
          if (ids.length > 0) await this.runTurn(sessionKey, ids, lane.controller.signal);
        } catch (error) {
          this.onError(error, sessionKey);
        } finally {
          lane.controller = undefined;
        }
      }
    } finally {
      lane.running = false;
      if (lane.pending.length === 0) this.lanes.delete(sessionKey);
    }
  }
}
