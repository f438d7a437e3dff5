import mqtt from "mqtt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createHardwareFeature } from "../../src/app/hardware-feature.js";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { ownerIdentity } from "../../src/core/identity.js";
import { MemoryGpio } from "../../src/hardware/gpio-memory.js";
import type { TriggerService } from "../../src/triggers/trigger-service.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { startTestApp, type TestApp, testConfig } from "../helpers/harness.js";
import { hasMosquitto, type Mosquitto, startMosquitto } from "../triggers/mosquitto.js";

/** `triggers.<name>` and `mqtt` reloaded into a running Magpie: added, changed and removed live; chat ones untouched. */

const OLD_SECRET = "o".repeat(32);
const NEW_SECRET = "n".repeat(32);
const deliver = { channel: "test", chat_id: "owner-chat" };
let app: TestApp | null = null;
afterEach(async () => {
  await app?.stop();
  app = null;
});

const service = (testApp: TestApp) => testApp.app.context.services.triggers as TriggerService;
const sentTexts = (testApp: TestApp) => testApp.channel!.sent.map((sent) => sent.message.text ?? "");
const countsOf = (testApp: TestApp, name: string) =>
  service(testApp)
    .list()
    .find((view) => view.name === name)?.counts;

/** The running app's config with `overrides` (same data dir), as a reload would read it. */
const reload = (testApp: TestApp, overrides: ConfigInput) =>
  testApp.app.reload(testConfig(overrides, testApp.dataDir, {}));

async function post(testApp: TestApp, name: string, secret: string, body: string) {
  const timestamp = Math.floor(Date.now() / 1000);
  const response = await fetch(`${testApp.url}/hooks/${name}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-magpie-timestamp": String(timestamp),
      "x-magpie-signature": signWebhook(secret, timestamp, body),
    },
    body,
  });
  return response.status;
}

const webhook = (secret: string, message: string) => ({
  on: { webhook: { secret } },
  do: { message },
  deliver,
});

describe("reload: webhook and cron triggers", () => {
  it("adds, changes and removes config triggers; unchanged ones keep their counts; a chat trigger is untouched", async () => {
    app = await startTestApp({
      llm: false,
      features: [triggersFeature],
      config: {
        triggers: {
          deploy: webhook(OLD_SECRET, "deploy {{event.payload.n}}"),
          keep: webhook(OLD_SECRET, "kept"),
        },
      },
    });
    const testApp = app;
    await service(testApp).add(
      {
        name: "chatty",
        ...webhook(OLD_SECRET, "from chat"),
        deliver: { ...deliver, pushover: false, ntfy: false },
        cooldownSecs: 0,
        maxPerHour: 60,
        enabled: true,
      },
      {
        creator: { identity: ownerIdentity("test") },
        createdFrom: { channel: "test", chatId: "owner-chat" },
      },
    );
    expect(await post(testApp, "keep", OLD_SECRET, "{}")).toBe(202);
    expect(await post(testApp, "build", NEW_SECRET, "{}")).toBe(404);

    const result = await reload(testApp, {
      triggers: {
        deploy: webhook(NEW_SECRET, "deploy {{event.payload.n}}"),
        keep: webhook(OLD_SECRET, "kept"),
        build: webhook(NEW_SECRET, "built"),
      },
    });
    expect(result.failures).toEqual([]);
    // The old secret no longer signs for `deploy`; the new one does; `build` exists now.
    expect(await post(testApp, "deploy", OLD_SECRET, '{"n":1}')).toBe(401);
    expect(await post(testApp, "deploy", NEW_SECRET, '{"n":2}')).toBe(202);
    expect(await post(testApp, "build", NEW_SECRET, "{}")).toBe(202);
    expect(countsOf(testApp, "keep")).toMatchObject({ fired: 1 });

    await reload(testApp, { triggers: { keep: webhook(OLD_SECRET, "kept") } });
    expect(await post(testApp, "deploy", NEW_SECRET, '{"n":3}')).toBe(404);
    expect(await post(testApp, "build", NEW_SECRET, "{}")).toBe(404);
    expect(await post(testApp, "chatty", OLD_SECRET, '{"chat":1}')).toBe(202);
    expect(
      service(testApp)
        .list()
        .map((view) => [view.name, view.source]),
    ).toEqual([
      ["chatty", "chat"],
      ["keep", "config"],
    ]);
    await waitFor(() => sentTexts(testApp).length === 4, "four messages");
    expect(sentTexts(testApp).sort()).toEqual(["built", "deploy 2", "from chat", "kept"]);

    // A config trigger may not take the name of one made in chat: refused, nothing changes.
    const clash = await reload(testApp, {
      triggers: { keep: webhook(OLD_SECRET, "kept"), chatty: webhook(NEW_SECRET, "x") },
    });
    expect(clash.failures[0]?.error).toMatch(
      /triggers\.chatty: a trigger made in chat already has this name/,
    );
    expect(await post(testApp, "chatty", OLD_SECRET, '{"chat":2}')).toBe(202);
  });

  it("refuses a bad predicate without changing any trigger, and loads the runtime for the first trigger", async () => {
    app = await startTestApp({ llm: false, features: [triggersFeature], config: {} });
    const testApp = app;
    expect(service(testApp).loaded()).toBeNull();
    const bad = await reload(testApp, {
      triggers: {
        deploy: { ...webhook(OLD_SECRET, "x"), when: "event.payload.n >" },
      },
    });
    expect(bad.failures).toEqual([
      { part: "triggers", error: expect.stringMatching(/triggers\.deploy\.when: /) },
    ]);
    expect(await post(testApp, "deploy", OLD_SECRET, "{}")).toBe(404);

    const good = await reload(testApp, {
      triggers: { deploy: { ...webhook(OLD_SECRET, "deployed"), when: "event.payload.n > 1" } },
    });
    expect(good.failures).toEqual([]);
    expect(await post(testApp, "deploy", OLD_SECRET, '{"n":2}')).toBe(202);

    // With the runtime running: a bad `when` on a new trigger and a good change together change nothing.
    const mixed = await reload(testApp, {
      triggers: {
        deploy: { ...webhook(NEW_SECRET, "deployed"), when: "event.payload.n > 1" },
        other: { ...webhook(OLD_SECRET, "x"), when: "event.payload.n ===" },
      },
    });
    expect(mixed.failures[0]?.error).toMatch(/triggers\.other\.when: /);
    expect(await post(testApp, "deploy", OLD_SECRET, '{"n":3}')).toBe(202);
    expect(await post(testApp, "deploy", NEW_SECRET, '{"n":4}')).toBe(401);
    await waitFor(() => sentTexts(testApp).length === 2, "two messages");
  });

  it("a removed cron trigger stops checking; a changed one checks on its new schedule", async () => {
    const check = (message: string, cron: string) => ({ on: { cron }, do: { message }, deliver });
    app = await startTestApp({
      llm: false,
      features: [triggersFeature],
      config: { triggers: { ping: check("ping", "* * * * * *") } },
    });
    const testApp = app;
    await waitFor(() => sentTexts(testApp).includes("ping"), "a first check", 5_000);
    await reload(testApp, { triggers: { pong: check("pong", "* * * * * *") } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const pings = sentTexts(testApp).filter((text) => text === "ping").length;
    await waitFor(() => sentTexts(testApp).includes("pong"), "the new trigger's check", 5_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(sentTexts(testApp).filter((text) => text === "ping").length).toBe(pings);
  });
});

describe("reload: GPIO triggers", () => {
  it("a changed edge takes effect at once", async () => {
    const gpio = new MemoryGpio();
    gpio.levels.set(17, 0);
    const door = (edge: "rising" | "falling") => ({
      door: { on: { gpio: { pin: "door", edge } }, do: { message: `door {{event.edge}}` }, deliver },
    });
    const hardware: ConfigInput["hardware"] = {
      boards: [{ name: "pi", type: "rpi-gpio" }],
      pins: { door: { line: 17, direction: "in", edge: "both" } },
    };
    app = await startTestApp({
      llm: false,
      features: [createHardwareFeature({ gpio: () => gpio }), triggersFeature],
      config: { hardware, triggers: door("rising") },
    });
    const testApp = app;
    await waitFor(() => gpio.directions.get(17) === "in", "the watched line");
    gpio.drive(17, 1);
    await waitFor(() => sentTexts(testApp).length === 1, "the rising edge");
    const result = await reload(testApp, { hardware, triggers: door("falling") });
    expect(result.failures).toEqual([]);
    gpio.drive(17, 0);
    await waitFor(() => sentTexts(testApp).length === 2, "the falling edge");
    gpio.drive(17, 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sentTexts(testApp)).toEqual(["door rising", "door falling"]);
  });
});

const broker = hasMosquitto();
describe.skipIf(!broker)("reload: MQTT triggers and settings (real broker)", () => {
  let first: Mosquitto | null = null;
  let second: Mosquitto | null = null;
  beforeAll(async () => {
    [first, second] = await Promise.all([startMosquitto(), startMosquitto()]);
  });
  afterAll(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
  });

  async function publish(url: string, topic: string, payload: string) {
    const client = await mqtt.connectAsync(url, { clientId: `test-${Math.random().toString(16).slice(2)}` });
    await client.publishAsync(topic, payload, { qos: 1 });
    await client.endAsync();
  }

  it("a changed topic and a new mqtt.url resubscribe; the old topic and broker go quiet", async () => {
    const sensor = (topic: string) => ({
      hot: { on: { mqtt: { topic } }, do: { message: "{{event.topic}}" }, deliver },
    });
    app = await startTestApp({
      llm: false,
      features: [triggersFeature],
      config: { mqtt: { url: first!.url }, triggers: sensor("house/a") },
    });
    const testApp = app;
    const settled = () => service(testApp).loaded()!.mqtt.settled();
    await settled();
    await publish(first!.url, "house/a", "1");
    await waitFor(() => sentTexts(testApp).length === 1, "house/a");

    await reload(testApp, { mqtt: { url: first!.url }, triggers: sensor("house/b") });
    await settled();
    await publish(first!.url, "house/a", "2");
    await publish(first!.url, "house/b", "3");
    await waitFor(() => sentTexts(testApp).length === 2, "house/b");

    const moved = await reload(testApp, { mqtt: { url: second!.url }, triggers: sensor("house/b") });
    expect(moved.failures).toEqual([]);
    await settled();
    await publish(first!.url, "house/b", "4");
    await publish(second!.url, "house/b", "5");
    await waitFor(() => sentTexts(testApp).length === 3, "house/b on the second broker");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sentTexts(testApp)).toEqual(["house/a", "house/b", "house/b"]);
    expect(countsOf(testApp, "hot")).toMatchObject({ fired: 3 });
  });
});
