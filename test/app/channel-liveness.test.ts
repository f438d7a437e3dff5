import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ChannelLiveness, type ChannelLivenessReport } from "../../src/app/channel-liveness.js";
import type { ChannelAdapter, ChannelStatus } from "../../src/core/types.js";
import { Store } from "../../src/store/index.js";

/** An adapter whose status the test sets, counting reconnects. */
function scriptedAdapter(name: string, status: ChannelStatus) {
  const adapter = {
    name,
    current: status,
    reconnects: [] as string[],
    status: () => adapter.current,
    reconnect: (reason: string) => {
      adapter.reconnects.push(reason);
      adapter.current = { ...adapter.current, state: "reconnecting", detail: reason };
    },
  };
  return adapter;
}

describe("ChannelLiveness: one alert per incident", () => {
  const stores: Store[] = [];
  afterEach(() => {
    for (const store of stores.splice(0)) store.close();
  });

  const monitor = (store: Store, adapter: ReturnType<typeof scriptedAdapter>, clock: { now: number }) => {
    const told: Array<{ phase: string; report: ChannelLivenessReport }> = [];
    const liveness = new ChannelLiveness({
      adapters: () => new Map([[adapter.name, adapter as unknown as ChannelAdapter]]),
      limitSecs: () => 10,
      kv: store.kv,
      logger: pino({ level: "silent" }),
      now: () => clock.now,
      tellOwner: (report, phase) => told.push({ phase, report }),
    });
    return { liveness, told };
  };

  it("reconnects each limit, tells once, says back once — and a restart mid-incident neither repeats nor forgets", () => {
    const store = Store.open(":memory:");
    stores.push(store);
    const clock = { now: 1_000_000 };
    const adapter = scriptedAdapter("telegram", {
      state: "connected",
      since: clock.now,
      lastReceiveAt: clock.now,
    });
    const first = monitor(store, adapter, clock);
    first.liveness.check();
    expect(adapter.reconnects).toHaveLength(0);

    clock.now += 11_000; // silent past the 10 s limit
    first.liveness.check();
    expect(adapter.reconnects).toHaveLength(1);
    expect(adapter.reconnects[0]).toMatch(/no receive cycle for 11 s \(limit 10 s\)/);
    expect(first.told).toHaveLength(0);

    clock.now += 10_000; // still silent a limit later: reconnected again, the owner told
    first.liveness.check();
    expect(adapter.reconnects).toHaveLength(2);
    expect(first.told.map((entry) => entry.phase)).toEqual(["down"]);
    expect(first.told[0]?.report).toMatchObject({ channel: "telegram", cause: "silent", limitSecs: 10 });

    // A restart during the incident: a new monitor, the same database.
    const second = monitor(store, adapter, clock);
    for (let step = 0; step < 5; step++) {
      clock.now += 10_000;
      second.liveness.check();
    }
    expect(second.told).toHaveLength(0);

    // A receive cycle completes: one "back" note, and a later incident is told again.
    adapter.current = { state: "connected", since: clock.now, lastReceiveAt: clock.now };
    second.liveness.check();
    second.liveness.check();
    expect(second.told.map((entry) => entry.phase)).toEqual(["back"]);
  });

  it("a channel that failed for good (a refused token) is not reconnected, but the owner is told", () => {
    const store = Store.open(":memory:");
    stores.push(store);
    const clock = { now: 5_000_000 };
    const adapter = scriptedAdapter("matrix", { state: "failed", detail: "token refused", since: clock.now });
    const { liveness, told } = monitor(store, adapter, clock);
    liveness.check();
    clock.now += 25_000;
    liveness.check();
    expect(adapter.reconnects).toHaveLength(0);
    expect(told.map((entry) => entry.report)).toEqual([
      expect.objectContaining({ channel: "matrix", cause: "silent", detail: "token refused" }),
    ]);
  });
});
