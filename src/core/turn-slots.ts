import { Semaphore } from "./semaphore.js";

/** One of the `agent.maxConcurrentTurns` slots, held by a running turn. */
export interface TurnSlot {
  release(): void;
  /**
   * Gives the slot back while `wait` runs (an approval or a question waiting for a person) and takes one again
   * before returning, so a paused turn never stalls other chats.
   */
  whileWaiting<T>(wait: () => Promise<T>): Promise<T>;
}

/** The global limit on turns running at once (`agent.maxConcurrentTurns`); a waiting turn holds no slot. */
export class TurnSlots {
  private readonly semaphore: Semaphore;
  private paused = 0;

  constructor(limit: number) {
    this.semaphore = new Semaphore(limit);
  }

  async acquire(): Promise<TurnSlot> {
    let release = await this.semaphore.acquire();
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        release();
      },
      whileWaiting: async (wait) => {
        if (!held) return wait();
        held = false;
        release();
        this.paused++;
        try {
          return await wait();
        } finally {
          this.paused--;
          release = await this.semaphore.acquire();
          held = true;
        }
      },
    };
  }

  get running(): number {
    return this.semaphore.running;
  }

  /** Turns waiting for a slot. */
  get waiting(): number {
    return this.semaphore.waiting;
  }

  /** Turns paused on an approval or a question (holding no slot). */
  get pausedCount(): number {
    return this.paused;
  }
}
