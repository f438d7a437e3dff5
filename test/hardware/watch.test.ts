import { afterEach, describe, expect, it, vi } from "vitest";
import { features } from "../../src/app/features.js";
import { createHardwareFeature } from "../../src/app/hardware-feature.js";
import { MemoryGpio } from "../../src/hardware/gpio-memory.js";
import { GpioService, type PinEdge } from "../../src/hardware/gpio-service.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/** Watched pins: debounced edges → chat, Pushover and agent turns, recorded and rate-limited. */

let app: TestApp | null = null;
let pushover: PushoverFake | null = null;
afterEach(async () => {
  vi.useRealTimers();
  await app?.stop();
  await pushover?.close();
  app = null;
  pushover = null;
});

const withoutHardware = features.filter((feature) => feature.name !== "hardware");

async function startWatching(watch: Record<string, unknown>, gpio: MemoryGpio, llm = false) {
  pushover = await startPushoverFake();
  app = await startTestApp({
    features: [...withoutHardware, createHardwareFeature({ gpio: () => gpio })],
    llm,
    config: {
      notify: { pushover: { token: "a".repeat(30), user: "u".repeat(30), proxy: pushover.proxyUrl } },
      hardware: {
        boards: [{ name: "pi", type: "rpi-gpio" }],
        pins: { door: { line: 17, direction: "in", edge: "both", debounceMs: 30, activeLow: true } },
        watch: [
          { pin: "door", notify: { channel: "test", chat_id: "owner-chat", pushover: true }, ...watch },
        ],
      },
    },
  });
  // The line is opened at start; its initial level is read before edges count.
  await waitFor(() => gpio.directions.get(17) === "in", "the watched line");
  await new Promise((resolve) => setTimeout(resolve, 20));
  return app;
}

const chatTexts = (testApp: TestApp) => testApp.channel!.sent.map((sent) => sent.message.text ?? "");

describe("hardware.watch", () => {
  it("a bouncing door contact reaches the chat and Pushover once per debounced edge", async () => {
    const gpio = new MemoryGpio();
    gpio.levels.set(17, 1); // active-low: raw 1 = closed (0)
    const testApp = await startWatching({}, gpio);
    // Contact bounce: five raw changes within a few ms, settling at raw 0 = logical 1 (open).
    for (const level of [0, 1, 0, 1, 0] as const) gpio.drive(17, level);
    await waitFor(() => chatTexts(testApp).length >= 1, "the chat message");
    await pushover!.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(chatTexts(testApp)).toHaveLength(1);
    expect(chatTexts(testApp)[0]).toMatch(/door: rising \(now 1\)/);
    expect(testApp.channel!.sent[0]?.target.chatId).toBe("owner-chat");
    expect(pushover!.notifications).toHaveLength(1);
    expect(pushover!.notifications[0]?.fields.message).toMatch(/door: rising/);
    // A bounce that returns to where it was is no edge at all.
    gpio.drive(17, 1);
    gpio.drive(17, 0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(chatTexts(testApp)).toHaveLength(1);
    const events = testApp.app.context.services.hardware?.events?.events() ?? [];
    expect(events.map((event) => [event.pin, event.edge, event.delivered])).toEqual([
      ["door", "rising", ["chat", "pushover"]],
    ]);
  });

  it("with a prompt, an edge starts an agent turn in the chat (event note) and its answer arrives", async () => {
    const gpio = new MemoryGpio();
    const testApp = await startWatching(
      { prompt: "Say whether anyone is expected.", notify: { channel: "test", chat_id: "owner-chat" } },
      gpio,
      true,
    );
    testApp.llm!.script(
      reply.text("Nobody is expected — the door opened.", (body) => {
        const last = body.messages.at(-1)?.content ?? "";
        expect(last).toMatch(/Event — hardware door/);
        expect(last).toMatch(/Say whether anyone is expected/);
      }),
    );
    gpio.drive(17, 1); // active-low: raw 1 is logical 0
    await waitFor(
      () => chatTexts(testApp).some((text) => text.includes("Nobody is expected")),
      "the agent's answer",
    );
    expect(chatTexts(testApp)[0]).toMatch(/door: falling \(now 0\)/);
    testApp.llm!.assertDone();
  });
});

describe("debounce and rate limit (fake timers)", () => {
  it("GpioService reports the settled level once, after debounceMs of quiet", async () => {
    vi.useFakeTimers();
    const gpio = new MemoryGpio();
    const service = new GpioService(
      {
        boards: [{ name: "pi", type: "rpi-gpio" }],
        pins: { button: { line: 5, direction: "in", edge: "falling", debounceMs: 50, activeLow: false } },
        watch: [],
      },
      () => gpio,
    );
    const edges: PinEdge[] = [];
    service.onEdge((edge) => edges.push(edge));
    gpio.levels.set(5, 1);
    await service.watch("button");
    await vi.advanceTimersByTimeAsync(1);
    gpio.drive(5, 0);
    await vi.advanceTimersByTimeAsync(20);
    gpio.drive(5, 1);
    gpio.drive(5, 0);
    await vi.advanceTimersByTimeAsync(49);
    expect(edges).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    expect(edges.map((edge) => [edge.pin, edge.edge, edge.value])).toEqual([["button", "falling", 0]]);
    // A rising edge is not watched (edge: falling).
    gpio.drive(5, 1);
    await vi.advanceTimersByTimeAsync(60);
    expect(edges).toHaveLength(1);
    await service.close();
  });

  it("more than maxPerMinute edges a minute are recorded as suppressed, not delivered", async () => {
    const gpio = new MemoryGpio();
    const testApp = await startWatching(
      { maxPerMinute: 2, notify: { channel: "test", chat_id: "owner-chat" } },
      gpio,
    );
    // debounceMs 30: space the edges out so each one settles.
    for (const level of [1, 0, 1, 0] as const) {
      gpio.drive(17, level);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(chatTexts(testApp)).toHaveLength(2);
    const events = testApp.app.context.services.hardware?.events?.events() ?? [];
    expect(events.map((event) => event.delivered[0])).toEqual(["chat", "chat", "suppressed", "suppressed"]);
  });
});
