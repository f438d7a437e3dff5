import mqtt from "mqtt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { Store } from "../../src/store/index.js";
import { brokerKey, sameBroker } from "../../src/triggers/mqtt-broker.js";
import { firstDelivery, topicMatches } from "../../src/triggers/mqtt-hub.js";
import { chatFilterProblem, topicFilterProblem } from "../../src/triggers/mqtt-topic.js";
import { RetainedLedger } from "../../src/triggers/retained-ledger.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { hostileInputs, LINEAR_BOUND_MS, timed } from "../helpers/hostile-inputs.js";
import { hasMosquitto, type Mosquitto, startMosquitto } from "./mosquitto.js";

/** MQTT triggers against a real broker (Debian's mosquitto on a free port): gated before the LLM. */

const broker = hasMosquitto();
let mosquitto: Mosquitto | null = null;
let app: TestApp | null = null;

beforeAll(async () => {
  if (broker) mosquitto = await startMosquitto();
});
afterAll(async () => {
  await mosquitto?.stop();
});
afterEach(async () => {
  await app?.stop();
  app = null;
});

async function publisher(url: string) {
  const client = await mqtt.connectAsync(url, { clientId: `test-${Math.random().toString(16).slice(2)}` });
  return client;
}

const sentTexts = (testApp: TestApp) => testApp.channel!.sent.map((sent) => sent.message.text ?? "");
const countsOf = (testApp: TestApp, name: string) =>
  testApp.app.context.services.triggers!.list().find((view) => view.name === name)!.counts;

async function start(triggers: NonNullable<ConfigInput["triggers"]>, extra: ConfigInput = {}) {
  app = await startTestApp({
    features: [triggersFeature],
    config: { mqtt: { url: mosquitto!.url }, triggers, ...extra },
  });
  await app.app.context.services.triggers!.loaded()?.mqtt.settled();
  return app;
}

describe.skipIf(!broker)("MQTT triggers (real broker)", () => {
  it("1,000 events whose predicate is false cause 0 LLM requests and 0 messages; each matching one, exactly one action", async () => {
    const testApp = await start({
      hot: {
        on: { mqtt: { topic: "home/+/temperature" } },
        when: "event.payload.temperature > 30.0",
        do: { message: "{{event.topic}}: {{event.payload.temperature}} °C" },
        deliver: { channel: "test", chat_id: "owner-chat" },
        maxPerHour: 3600,
      },
      ask: {
        on: { mqtt: { topic: "home/+/temperature" } },
        when: "event.payload.temperature > 100.0",
        do: { prompt: "Is the house on fire?" },
        deliver: { channel: "test", chat_id: "owner-chat" },
      },
    });
    const client = await publisher(mosquitto!.url);
    for (let index = 0; index < 1_000; index++)
      await client.publishAsync("home/kitchen/temperature", JSON.stringify({ temperature: 22 }), { qos: 1 });
    for (let index = 0; index < 10; index++)
      await client.publishAsync("home/attic/temperature", JSON.stringify({ temperature: 31 + index / 10 }), {
        qos: 1,
      });
    await client.endAsync();
    await waitFor(() => countsOf(testApp, "ask").filtered === 1_010, "every event judged", 20_000);
    await waitFor(() => countsOf(testApp, "hot").fired === 10, "the matching events", 20_000);
    await testApp.app.context.services.triggers!.loaded()!.engine.idle();
    await waitFor(() => sentTexts(testApp).length === 10, "ten messages");
    expect(countsOf(testApp, "hot")).toEqual({ fired: 10, filtered: 1_000, errors: 0, dropped: 0 });
    expect(sentTexts(testApp)[0]).toBe("home/attic/temperature: 31 °C");
    expect(sentTexts(testApp)[9]).toBe("home/attic/temperature: 31.9 °C");
    expect(testApp.llm!.requests).toHaveLength(0);
  });

  it("attack: a flood is dropped and counted past maxPerHour, never queued", async () => {
    const testApp = await start({
      door: {
        on: { mqtt: { topic: "home/door" } },
        do: { message: "door: {{event.payload}}" },
        deliver: { channel: "test", chat_id: "owner-chat" },
        maxPerHour: 5,
      },
    });
    const client = await publisher(mosquitto!.url);
    await Promise.all(
      Array.from({ length: 500 }, (_, index) =>
        client.publishAsync("home/door", `open ${index}`, { qos: 1 }),
      ),
    );
    await client.endAsync();
    await waitFor(() => countsOf(testApp, "door").dropped === 495, "the flood judged", 20_000);
    await testApp.app.context.services.triggers!.loaded()!.engine.idle();
    expect(countsOf(testApp, "door")).toEqual({ fired: 5, filtered: 0, errors: 0, dropped: 495 });
    await waitFor(() => sentTexts(testApp).length === 5, "five messages");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sentTexts(testApp)).toHaveLength(5);
  });

  it("reconnects after the broker restarts and keeps receiving", async () => {
    const testApp = await start({
      ping: {
        on: { mqtt: { topic: "test/ping" } },
        do: { message: "ping {{event.payload}}" },
        deliver: { channel: "test", chat_id: "owner-chat" },
      },
    });
    const first = await publisher(mosquitto!.url);
    await first.publishAsync("test/ping", "1", { qos: 1 });
    await first.endAsync();
    await waitFor(() => sentTexts(testApp).includes("ping 1"), "the first ping");
    const port = mosquitto!.port;
    await mosquitto!.stop();
    mosquitto = await startMosquitto(port);
    const second = await publisher(mosquitto.url);
    // The trigger's subscription comes back with the connection (back-off starts at 1 s).
    await waitFor(
      async () => {
        await second.publishAsync("test/ping", "2", { qos: 1 });
        return sentTexts(testApp).includes("ping 2");
      },
      "a ping after the restart",
      15_000,
    );
    await second.endAsync();
  });

  it("mqtt_publish reaches the broker on an allowed topic; elsewhere it needs an owner's approval", async () => {
    const testApp = await start(
      {},
      {
        mqtt: { url: mosquitto!.url, publishAllow: ["home/lamp/+"] },
        security: { approvals: { require: ["risk:high"] } },
      },
    );
    const listener = await publisher(mosquitto!.url);
    const received: string[] = [];
    listener.on("message", (topic, payload) => received.push(`${topic}=${payload.toString()}`));
    await listener.subscribeAsync("home/#", { qos: 1 });
    testApp.llm!.script(
      reply.toolCalls([
        { name: "mqtt_publish", arguments: { topic: "home/lamp/set", payload: "ON" } },
        { name: "mqtt_publish", arguments: { topic: "home/boiler/set", payload: "OFF" } },
      ]),
      reply.text("Done."),
    );
    await testApp.channel!.receive("lamp on, boiler off");
    await waitFor(() => sentTexts(testApp).includes("Done."), "the answer", 10_000);
    const results = testApp.llm!.requests[1]!.messages.filter((message) => message.role === "tool");
    expect(JSON.parse(String(results[0]?.content))).toMatchObject({
      published: true,
      topic: "home/lamp/set",
    });
    expect(String(results[1]?.content)).toMatch(/approval|denied/);
    await waitFor(() => received.includes("home/lamp/set=ON"), "the published message");
    expect(received).not.toContain("home/boiler/set=OFF");
    await listener.endAsync();
  });
});

describe.skipIf(!broker)("MQTT: each message reaches each trigger once (real broker)", () => {
  const deliver = { channel: "test", chat_id: "owner-chat" };

  /** Starts Magpie on `dataDir` (kept when it stops: a restart), waits for its subscriptions. */
  async function run(dataDir: string | undefined, triggers: NonNullable<ConfigInput["triggers"]>) {
    const testApp = await startTestApp({
      llm: false,
      features: [triggersFeature],
      config: { mqtt: { url: mosquitto!.url }, triggers },
      ...(dataDir ? { dataDir } : {}),
    });
    await testApp.app.context.services.triggers!.loaded()!.mqtt.settled();
    return testApp;
  }

  /** Publishes a plain (not retained) message and waits for `expected` in the chat: what came before is in too. */
  async function canary(testApp: TestApp, topic: string, payload: string, expected: string) {
    const client = await publisher(mosquitto!.url);
    await client.publishAsync(topic, payload, { qos: 1 });
    await client.endAsync();
    await waitFor(() => sentTexts(testApp).includes(expected), expected);
    await testApp.app.context.services.triggers!.loaded()!.engine.idle();
  }

  it("attack: a retained message is handled once across restarts; a changed one is handled once", async () => {
    const topic = `house-${Date.now()}/door`;
    const triggers = {
      door: { on: { mqtt: { topic } }, do: { message: "door {{event.payload}}" }, deliver },
    };
    const client = await publisher(mosquitto!.url);
    await client.publishAsync(topic, "open", { qos: 1, retain: true });
    const seen: string[][] = [];
    // First run: the retained state arrives on subscribing; a live retained change arrives too.
    const first = await run(undefined, triggers);
    await waitFor(() => sentTexts(first).includes("door open"), "the retained state");
    await client.publishAsync(topic, "ajar", { qos: 1, retain: true });
    await canary(first, topic, "c1", "door c1");
    seen.push(sentTexts(first));
    await first.stop({ keepData: true });
    // Two restarts: the broker sends "ajar" again each time; it was handled already.
    for (const label of ["c2", "c3"]) {
      const again = await run(first.dataDir, triggers);
      await canary(again, topic, label, `door ${label}`);
      seen.push(sentTexts(again));
      await again.stop({ keepData: true });
    }
    // Changed while Magpie was away: handled once (queued for the session, then sent again on subscribing).
    await client.publishAsync(topic, "closed", { qos: 1, retain: true });
    await client.endAsync();
    const last = await run(first.dataDir, triggers);
    await canary(last, topic, "c4", "door c4");
    seen.push(sentTexts(last));
    await last.stop();
    expect(seen).toEqual([
      ["door open", "door ajar", "door c1"],
      ["door c2"],
      ["door c3"],
      ["door closed", "door c4"],
    ]);
  });

  it("attack: overlapping filters (a/# and a/+) give a message — live or retained — to each trigger once", async () => {
    const root = `ov-${Date.now()}`;
    const client = await publisher(mosquitto!.url);
    await client.publishAsync(`${root}/b`, "r1", { qos: 1, retain: true });
    app = await run(undefined, {
      all: { on: { mqtt: { topic: `${root}/#` } }, do: { message: "all {{event.payload}}" }, deliver },
      plus: { on: { mqtt: { topic: `${root}/+` } }, do: { message: "plus {{event.payload}}" }, deliver },
      again: { on: { mqtt: { topic: `${root}/+` } }, do: { message: "again {{event.payload}}" }, deliver },
    });
    await client.publishAsync(`${root}/b`, "m1", { qos: 1 });
    await client.endAsync();
    // Only a/# takes a/c/d: once it is in, everything before it is too.
    await canary(app, `${root}/c/d`, "end", "all end");
    const texts = sentTexts(app).sort();
    expect(texts).toEqual(["again m1", "again r1", "all end", "all m1", "all r1", "plus m1", "plus r1"]);
    expect(countsOf(app, "all").fired).toBe(3);
  });
});

describe("MQTT details", () => {
  it("a redelivered QoS 1 message (DUP) is not run twice; a new one with the same id is", () => {
    const recent = new Set<string>();
    const payload = Buffer.from('{"t":1}');
    expect(firstDelivery(recent, 7, false, "a/b", payload)).toBe(true);
    expect(firstDelivery(recent, 7, true, "a/b", payload)).toBe(false);
    expect(firstDelivery(recent, 7, false, "a/b", Buffer.from('{"t":2}'))).toBe(true);
  });

  it("one broker however its URL is spelled; another host, port or scheme is another broker", () => {
    expect(sameBroker("mqtt://Broker.lan", "mqtt://broker.lan:1883/")).toBe(true);
    expect(sameBroker("mqtt://user:pw@broker.lan:1883", "mqtt://broker.lan")).toBe(true);
    expect(sameBroker("mqtt://broker.lan", "mqtts://broker.lan")).toBe(false);
    expect(sameBroker("mqtt://broker.lan", "mqtt://broker.lan:1884")).toBe(false);
    expect(sameBroker("mqtt://broker.lan", "mqtt://broker.lan.evil.example")).toBe(false);
    expect(sameBroker("ws://broker.lan/mqtt", "ws://broker.lan:80/other")).toBe(false);
    expect(brokerKey("not a url")).toBeNull();
  });

  it("topic filters: wildcards fill a level; a chat trigger names a level of its own and no $ topic", () => {
    expect(topicFilterProblem("home/+/temperature")).toBeNull();
    expect(topicFilterProblem("home/#")).toBeNull();
    expect(topicFilterProblem("home/#/x")).toMatch(/# must be a whole level and the last/);
    expect(topicFilterProblem("home/te+mp")).toMatch(/\+ must be a whole level/);
    for (const wide of ["#", "+/#", "+/+", "/#", "$SYS/#"]) expect(chatFilterProblem(wide)).not.toBeNull();
    expect(chatFilterProblem("+/temperature")).toBeNull();
    for (const [name, input] of Object.entries(hostileInputs())) {
      const elapsed = timed(() => {
        topicFilterProblem(input);
        chatFilterProblem(input);
        brokerKey(input);
        topicMatches(input, input);
      });
      expect(elapsed, name).toBeLessThan(LINEAR_BOUND_MS);
    }
  });

  it("the retained ledger: once per change per trigger and topic, any topic name, kept across a restart", () => {
    const store = Store.open(":memory:");
    const ledger = new RetainedLedger(store.kv);
    const open = Buffer.from("open");
    expect(ledger.take("door", "__proto__", open)).toBe(true);
    expect(ledger.take("door", "__proto__", open)).toBe(false);
    expect(ledger.take("other", "__proto__", open)).toBe(true);
    expect(ledger.take("door", "__proto__", Buffer.from("closed"))).toBe(true);
    expect(new RetainedLedger(store.kv).take("door", "__proto__", Buffer.from("closed"))).toBe(false);
    // A row is bounded: the oldest topics give way.
    for (let index = 0; index < 600; index++) ledger.take("wide", `t/${index}`, open);
    expect(store.kv.get("triggers.mqtt_retained.wide", z.array(z.unknown()))).toHaveLength(500);
    ledger.forget("door");
    expect(new RetainedLedger(store.kv).take("door", "__proto__", Buffer.from("closed"))).toBe(true);
    store.close();
  });

  it("matches topic filters with + and #", () => {
    expect(topicMatches("home/+/temperature", "home/attic/temperature")).toBe(true);
    expect(topicMatches("home/+/temperature", "home/attic/humidity")).toBe(false);
    expect(topicMatches("home/#", "home")).toBe(true);
    expect(topicMatches("home/#", "home/a/b/c")).toBe(true);
    expect(topicMatches("#", "$SYS/broker")).toBe(false);
    expect(topicMatches("home/+", "home/a/b")).toBe(false);
  });
});
