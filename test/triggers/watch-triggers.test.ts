import pino from "pino";
import { describe, expect, it } from "vitest";
import { hardwareSchema } from "../../src/config/sections/hardware.js";
import type { ActionRunner, ActionSource, ImmediateDelivery } from "../../src/scheduler/action-runner.js";
import type { TriggerEvent, TriggerResult } from "../../src/triggers/trigger.js";
import { createTriggerActions } from "../../src/triggers/trigger-actions.js";
import { TriggerEngine } from "../../src/triggers/trigger-engine.js";
import { watchRecord, watchTriggers } from "../../src/triggers/watch-triggers.js";

/**
 * `hardware.watch` as gpio triggers: the watches of a pin become one trigger at load, gated by the engine (the
 * smallest `maxPerMinute`, a rolling minute) and reported through the one action runner. The end-to-end behaviour
 * (a bouncing door, the prompt's turn, the suppressed record) is test/hardware/watch.test.ts, unchanged.
 */

const hardware = hardwareSchema.parse({
  boards: [{ name: "pi", type: "rpi-gpio" }],
  pins: {
    door: { line: 17, direction: "in", edge: "both" },
    bell: { line: 22, direction: "in", edge: "falling" },
  },
  watch: [
    { pin: "door", notify: { channel: "test", chat_id: 42 }, maxPerMinute: 5 },
    { pin: "door", notify: { pushover: true }, maxPerMinute: 2 },
    { pin: "bell", notify: { channel: "test", chat_id: "owner-chat" }, prompt: "Who is it?" },
  ],
});

function edge(at: number, value: 0 | 1 = 1): TriggerEvent {
  const kind = value === 1 ? "rising" : "falling";
  return { source: "gpio", pin: "door", value, edge: kind, payload: { pin: "door", value, edge: kind }, at };
}

/** A runner that records what it is asked to deliver. */
function recordingRunner() {
  const delivered: { from: ActionSource; to: ImmediateDelivery; text: string }[] = [];
  const runner: ActionRunner = {
    run: () => Promise.reject(new Error("a watch runs no work")),
    deliver: (from, to, text) => {
      delivered.push({ from, to, text });
      return Promise.resolve();
    },
  };
  return { runner, delivered };
}

describe("hardware.watch → gpio triggers", () => {
  it("one trigger per pin, on every edge the pin reports, the owners', with each watch's targets", () => {
    const [door, bell] = watchTriggers(hardware);
    expect(door).toMatchObject({
      name: "hardware.watch.door",
      on: { gpio: { pin: "door" } },
      maxPerMinute: 2,
      cooldownSecs: 0,
      enabled: true,
      source: "config",
      creator: { identity: { role: "owner" } },
      do: {
        watch: {
          pin: "door",
          targets: [{ chat: { channel: "test", chatId: "42" }, pushover: false }, { pushover: true }],
        },
      },
    });
    expect(door?.when).toBeUndefined();
    expect(bell?.do).toEqual({
      watch: {
        pin: "bell",
        targets: [{ chat: { channel: "test", chatId: "owner-chat" }, pushover: false, prompt: "Who is it?" }],
      },
    });
  });

  it("the engine lets the smallest maxPerMinute through a rolling minute; the next report says how many were kept back", async () => {
    let now = 1_700_000_000_000;
    const { runner, delivered } = recordingRunner();
    const judged: TriggerResult[] = [];
    const engine = new TriggerEngine({
      run: createTriggerActions({ runner, runTimeoutMs: 1_000 }),
      logger: pino({ level: "silent" }),
      now: () => now,
      judged: (_trigger, _event, result) => judged.push(result),
    });
    const [door] = watchTriggers(hardware);
    engine.put(door!);
    for (let index = 0; index < 4; index++) {
      engine.handle("hardware.watch.door", edge(now, index % 2 === 0 ? 1 : 0));
      now += 1_000;
    }
    await engine.idle();
    expect(judged).toEqual(["fired", "fired", "dropped", "dropped"]);
    // Each firing: the chat (the owner's file: not judged again) and the phone, named as the pin's watch.
    expect(delivered.map(({ to }) => to)).toEqual([
      { chat: { channel: "test", chatId: "42" }, recheck: false },
      { pushover: true },
      { chat: { channel: "test", chatId: "42" }, recheck: false },
      { pushover: true },
    ]);
    expect(delivered[0]?.from).toEqual({
      kind: "hardware",
      id: "door",
      label: "hardware.watch of door",
      origin: "event",
    });
    expect(delivered[0]?.text).toBe(
      `⚡ door: rising (now 1) at ${new Date(1_700_000_000_000).toISOString()}`,
    );
    now += 60_000;
    engine.handle("hardware.watch.door", edge(now));
    await engine.idle();
    expect(delivered.at(-1)?.text).toMatch(
      /^⚡ door: rising \(now 1\) at .* — 2 more event\(s\) in the last minute were not delivered \(rate limit\)$/,
    );
    expect(engine.list()[0]?.counts).toEqual({ fired: 3, filtered: 0, errors: 0, dropped: 2 });
  });

  it("a watch with a prompt hands the chat an event note with the request (a follow-up turn there)", async () => {
    const { runner, delivered } = recordingRunner();
    const [, bell] = watchTriggers(hardware);
    await createTriggerActions({ runner, runTimeoutMs: 1_000 })(
      bell!,
      { ...edge(0, 0), pin: "bell", payload: { pin: "bell", value: 0, edge: "falling" } },
      { dropped: 0 },
    );
    expect(delivered).toEqual([
      {
        from: { kind: "hardware", id: "bell", label: "hardware.watch of bell", origin: "event" },
        to: {
          chat: { channel: "test", chatId: "owner-chat" },
          recheck: false,
          followUp: {
            request: "Who is it?",
            sender: { channel: "test", userId: "owner-chat", role: "owner" },
          },
        },
        text: `⚡ bell: falling (now 0) at ${new Date(0).toISOString()}`,
      },
    ]);
  });

  it("one target failing still reaches the others, and the firing counts an error", async () => {
    const delivered: ImmediateDelivery[] = [];
    const runner: ActionRunner = {
      run: () => Promise.reject(new Error("no work")),
      deliver: (_from, to) => {
        delivered.push(to);
        return to.chat ? Promise.reject(new Error("chat down")) : Promise.resolve();
      },
    };
    const engine = new TriggerEngine({
      run: createTriggerActions({ runner, runTimeoutMs: 1_000 }),
      logger: pino({ level: "silent" }),
      now: () => 0,
    });
    engine.put(watchTriggers(hardware)[0]!);
    engine.handle("hardware.watch.door", edge(0));
    await engine.idle();
    expect(delivered).toEqual([
      { chat: { channel: "test", chatId: "42" }, recheck: false },
      { pushover: true },
    ]);
    expect(engine.list()[0]?.counts).toMatchObject({ fired: 1, errors: 1 });
  });

  it("records a fired edge with where it went, a dropped one as suppressed, and nothing for other triggers", () => {
    const [door, bell] = watchTriggers(hardware);
    expect(watchRecord(door!, edge(0), "fired")?.delivered).toEqual(["chat", "pushover"]);
    expect(watchRecord(bell!, edge(0), "fired")?.delivered).toEqual(["turn"]);
    expect(watchRecord(door!, edge(0), "dropped")).toMatchObject({
      edge: { pin: "door", edge: "rising", value: 1 },
      delivered: ["suppressed"],
    });
    const other = { ...door!, name: "door", do: { message: "x" } };
    expect(watchRecord(other, edge(0), "fired")).toBeNull();
  });
});
