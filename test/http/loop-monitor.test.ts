import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EventLoopMonitor } from "../../src/http/loop-monitor.js";

describe("EventLoopMonitor", () => {
  // A fake monotonic clock the test moves by hand; fake timers fire the heartbeat.
  let now = 0;
  const blocks: number[] = [];
  let monitor: EventLoopMonitor;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    now = 0;
    blocks.length = 0;
    monitor = new EventLoopMonitor({ maxBlockMs: 5_000, now: () => now, onBlock: (ms) => blocks.push(ms) });
    monitor.start();
  });
  afterEach(() => {
    monitor.stop();
    vi.useRealTimers();
  });

  /** The loop turning normally for `ms`: the clock and the timers move together. */
  function run(ms: number): void {
    for (let elapsed = 0; elapsed < ms; elapsed += monitor.tickMs) {
      now += monitor.tickMs;
      vi.advanceTimersByTime(monitor.tickMs);
    }
  }

  it("beats every tenth of the limit, between 50 and 500 ms", () => {
    expect(monitor.tickMs).toBe(500);
    expect(new EventLoopMonitor({ maxBlockMs: 100 }).tickMs).toBe(50);
    expect(new EventLoopMonitor({ maxBlockMs: 2_000 }).tickMs).toBe(200);
  });

  it("stays healthy while the loop keeps time, and through a stall shorter than the limit", () => {
    run(60_000);
    expect(monitor.status()).toEqual({ healthy: true, blockedMs: 0 });
    now += 4_000; // blocked: the clock moves, no timer fires
    expect(monitor.status().healthy).toBe(true);
    run(1_000);
    expect(monitor.status().healthy).toBe(true);
    expect(blocks).toEqual([]);
  });

  it("is unhealthy during a stall past the limit, and for as long again once the loop turns", () => {
    run(2_000);
    now += 8_000; // a request served before the heartbeat has caught up sees the stall itself
    expect(monitor.status()).toEqual({ healthy: false, blockedMs: 7_500 });
    run(500); // the late beat records it
    expect(blocks).toEqual([8_000]);
    expect(monitor.status()).toEqual({ healthy: false, blockedMs: 8_000 });
    run(4_000);
    expect(monitor.status().healthy).toBe(false);
    run(1_000); // 5 s of keeping time after the stall
    expect(monitor.status()).toEqual({ healthy: true, blockedMs: 0 });
  });

  it("measures a stall to within one tick", () => {
    run(1_000);
    now += 250; // the stall starts half a tick after a beat
    now += 5_600;
    vi.advanceTimersByTime(monitor.tickMs); // the overdue beat
    expect(blocks).toEqual([5_350]);
  });

  it("a stopped monitor has nothing to go on and reports healthy", () => {
    now += 60_000;
    monitor.stop();
    expect(monitor.status()).toEqual({ healthy: true, blockedMs: 0 });
  });
});
