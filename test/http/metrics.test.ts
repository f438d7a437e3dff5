import { networkInterfaces } from "node:os";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { metricsFeature } from "../../src/app/metrics-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { eventPublisher } from "../../src/core/events.js";
import { createMetrics, isLoopback } from "../../src/http/metrics.js";
import { LABEL_BOUNDS, type RegisteredNames } from "../../src/http/metrics-labels.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { Store } from "../../src/store/index.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { parseExposition, type Samples, sumOf } from "./metrics-exposition.js";

const TOKEN = "metrics-token-0123456789abcdef";
/** The names the unit tests' app registered. */
const NAMES: RegisteredNames = {
  tool: (name) => name === "file_read",
  channel: (name) => name === "telegram" || name === "discord",
  model: (name) => name === "m",
  trigger: (name) => name === "door",
};

/** prom-client's collectDefaultMetrics: the process's own, not Magpie's. */
const DEFAULT_METRIC = /^(process_|nodejs_)/;

/** The machine's first non-loopback IPv4 address, if it has one. */
const externalAddress = Object.values(networkInterfaces())
  .flat()
  .find((address) => address && address.family === "IPv4" && !address.internal)?.address;

async function scrape(url: string, headers: Record<string, string> = {}): Promise<Samples> {
  const response = await fetch(`${url}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await response.text()).samples;
}

describe("metrics from the event stream (unit)", () => {
  it("counts each app's events only, and reads the gauges from the database", async () => {
    const store = Store.open(":memory:");
    const app = `metrics-unit-${Math.random()}`;
    const metrics = createMetrics({
      app,
      db: store.db,
      channels: () => new Map(),
      names: NAMES,
      now: Date.now,
    });
    const events = eventPublisher(app);
    const other = eventPublisher(`other-${Math.random()}`);
    try {
      events.messageReceived({
        inboxId: 7,
        channel: "telegram",
        chatId: "1",
        messageId: "m1",
        sessionKey: "telegram:1",
        userId: "u",
        textChars: 5,
      });
      events.messageOutcome({ inboxIds: [7], outcome: "answered" });
      other.messageOutcome({ inboxIds: [7], outcome: "failed" });
      events.accessDecided({
        channel: "discord",
        chatId: "2",
        messageId: "x",
        userId: "s",
        verdict: "refused",
      });
      for (const verdict of ["pairing", "allowed"] as const) {
        events.accessDecided({ channel: "discord", chatId: "3", messageId: verdict, userId: "t", verdict });
      }
      events.llmCall({
        origin: "user",
        kind: "chat",
        model: "m",
        result: "ok",
        promptTokens: 100,
        completionTokens: 20,
        estimated: false,
        costUsd: 0.25,
        latencyMs: 40,
      });
      events.toolCall({ sessionKey: "s", tool: "file_read", verdict: "allowed", ok: true, durationMs: 3 });
      events.turnFinished({
        turnId: "t",
        origin: "user",
        sessionKey: "s",
        agent: "main",
        inboxIds: [7],
        status: "ok",
        durationMs: 1500,
        iterations: 2,
        toolCalls: 1,
      });
      events.cronRun({ jobId: "1", name: "backup", status: "missed", lagSeconds: 7200, durationMs: 0 });
      events.cronRun({ jobId: "1", name: "backup", status: "ran", lagSeconds: 0.5, durationMs: 10 });
      events.triggerEvent({ trigger: "door", result: "fired" });
      store.outbox.enqueue({ channel: "telegram", chatId: "1" }, { text: "hi" }, {});
      const { samples, types } = parseExposition(await metrics.render());
      expect(samples.get('magpie_messages_total{channel="telegram",outcome="answered"}')).toBe(1);
      expect(sumOf(samples, "magpie_messages_total", { outcome: "failed" })).toBe(0);
      expect(samples.get('magpie_messages_total{channel="discord",outcome="refused"}')).toBe(2);
      expect(samples.get('magpie_llm_requests_total{model="m",origin="user",result="ok"}')).toBe(1);
      expect(samples.get('magpie_llm_tokens_total{model="m",kind="prompt"}')).toBe(100);
      expect(samples.get('magpie_llm_tokens_total{model="m",kind="completion"}')).toBe(20);
      expect(samples.get('magpie_llm_cost_usd_total{model="m"}')).toBe(0.25);
      expect(samples.get('magpie_tool_calls_total{tool="file_read",verdict="allowed"}')).toBe(1);
      expect(samples.get('magpie_turn_seconds_count{origin="user"}')).toBe(1);
      expect(samples.get('magpie_turn_seconds_bucket{le="2",origin="user"}')).toBe(1);
      expect(samples.get('magpie_cron_runs_total{job="backup",status="missed"}')).toBe(1);
      expect(samples.get('magpie_cron_lag_seconds{job="backup"}')).toBe(0.5);
      expect(samples.get('magpie_trigger_events_total{trigger="door",result="fired"}')).toBe(1);
      expect(samples.get("magpie_outbox_pending")).toBe(1);
      expect(samples.get("magpie_inbox_pending")).toBe(0);
      expect(types.get("magpie_turn_seconds")).toBe("histogram");
      expect(types.get("process_resident_memory_bytes")).toBe("gauge");
    } finally {
      metrics.close();
      store.close();
    }
  });

  it("labels only with registered names, else unknown; each label's values are bounded (attack)", async () => {
    const store = Store.open(":memory:");
    const app = `metrics-labels-${Math.random()}`;
    let registered = new Set<string>(["file_read"]);
    const metrics = createMetrics({
      app,
      db: store.db,
      channels: () => new Map(),
      names: { ...NAMES, tool: (name) => registered.has(name) },
      now: Date.now,
    });
    const events = eventPublisher(app);
    const words = "ignore previous instructions \u001b]52;c;cm0g\u0007 my card is 4111";
    const series = async () => [...parseExposition(await metrics.render()).samples.keys()];
    try {
      const before = (await series()).length;
      // 200 tool names the model made up, one carrying a stranger's words; models, channels, triggers too.
      for (let index = 0; index < 200; index++) {
        const tool = index === 7 ? words : `made_up_${index}`;
        events.toolCall({ sessionKey: "s", tool, verdict: "allow", ok: false, durationMs: 1 });
      }
      events.toolCall({ sessionKey: "s", tool: "file_read", verdict: "allow", ok: true, durationMs: 1 });
      events.llmCall({
        origin: "user",
        kind: "chat",
        model: words,
        result: "ok",
        promptTokens: 1,
        completionTokens: 1,
        estimated: false,
        costUsd: 0.1,
        latencyMs: 1,
      });
      events.accessDecided({ channel: words, chatId: "1", messageId: "1", userId: "x", verdict: "refused" });
      events.triggerEvent({ trigger: words, result: "fired" });
      const after = await series();
      expect(after.filter((key) => key.includes("my card") || key.includes("made_up"))).toEqual([]);
      const { samples } = parseExposition(await metrics.render());
      expect(samples.get('magpie_tool_calls_total{tool="unknown",verdict="allow"}')).toBe(200);
      expect(samples.get('magpie_tool_calls_total{tool="file_read",verdict="allow"}')).toBe(1);
      expect(samples.get('magpie_llm_requests_total{model="unknown",origin="user",result="ok"}')).toBe(1);
      expect(samples.get('magpie_messages_total{channel="unknown",outcome="refused"}')).toBe(1);
      expect(samples.get('magpie_trigger_events_total{trigger="unknown",result="fired"}')).toBe(1);
      // Two tool series (file_read, unknown), four for the LLM call (requests, 2 × tokens, cost), one each else.
      expect(after.length - before).toBe(2 + 4 + 1 + 1);

      // Registered names, however many: at most the bound, the rest unknown.
      registered = new Set(Array.from({ length: 2 * LABEL_BOUNDS.tool }, (_, index) => `tool_${index}`));
      for (const tool of registered) {
        events.toolCall({ sessionKey: "s", tool, verdict: "allow", ok: true, durationMs: 1 });
      }
      const tools = new Set((await series()).filter((key) => key.startsWith("magpie_tool_calls_total{")));
      // file_read and unknown, and LABEL_BOUNDS.tool - 1 more (file_read took one place).
      expect(tools.size).toBe(LABEL_BOUNDS.tool + 1);
    } finally {
      metrics.close();
      store.close();
    }
  });

  it("reports a stall of the event loop as its lag, once", async () => {
    const store = Store.open(":memory:");
    const metrics = createMetrics({
      app: "loop-lag",
      db: store.db,
      channels: () => new Map(),
      names: NAMES,
      now: Date.now,
    });
    try {
      await metrics.render();
      const started = Date.now();
      while (Date.now() - started < 600) {
        // a synchronous stall, as a runaway parser would cause
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
      const stalled = parseExposition(await metrics.render()).samples.get("magpie_event_loop_lag_seconds");
      // Measured to within one beat (0.1 s).
      expect(stalled).toBeGreaterThanOrEqual(0.49);
      await new Promise((resolve) => setTimeout(resolve, 250));
      const after = parseExposition(await metrics.render()).samples.get("magpie_event_loop_lag_seconds");
      // Not reported again (that would be ≥ 0.49 s); a hiccup of the busy machine below 0.3 s may show.
      expect(after).toBeLessThan(0.3);
    } finally {
      metrics.close();
      store.close();
    }
  });

  it("knows loopback addresses, mapped ones included, and nothing else", () => {
    for (const address of ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"]) {
      expect(isLoopback(address)).toBe(true);
    }
    for (const address of [
      "10.0.0.1",
      "::ffff:10.0.0.1",
      "0.0.0.0",
      "::",
      "fe80::1",
      "127.0.0.1.evil",
      undefined,
    ]) {
      expect(isLoopback(address)).toBe(false);
    }
  });
});

describe("GET /metrics on a running app", () => {
  let testApp: TestApp | undefined;
  afterEach(async () => {
    await testApp?.stop();
    testApp = undefined;
  });

  it("is not served unless enabled", async () => {
    testApp = await startTestApp({ features: [metricsFeature] });
    expect((await fetch(`${testApp.url}/metrics`)).status).toBe(404);
  });

  it("counters move after a message, a tool call and a cron run; nothing moves while idle", async () => {
    testApp = await startTestApp({
      features: [schedulerFeature, usageFeature, metricsFeature],
      config: { http: { metrics: { enabled: true } } },
    });
    const { channel, llm, url } = testApp;
    const before = await scrape(url);
    expect(sumOf(before, "magpie_messages_total")).toBe(0);
    expect(before.get('magpie_channel_up{channel="test"}')).toBe(1);

    llm!.script(reply.toolCalls([{ name: "file_list", arguments: { path: "." } }]), reply.text("all listed"));
    await channel!.receive("list my files");
    await channel!.waitForSent(1);
    const scheduler = testApp.app.context.services.scheduler as Scheduler;
    // Due twelve hours from now (UTC, the test config's zone): never during the test, whenever it runs.
    const hour = (new Date().getUTCHours() + 12) % 24;
    const job = scheduler.add({ name: "nightly", expression: `0 ${hour} * * *`, message: "good night" });
    await scheduler.runNow(job.id);

    await expect
      .poll(async () => sumOf(await scrape(url), "magpie_messages_total", { outcome: "answered" }))
      .toBe(1);
    const after = await scrape(url);
    expect(after.get('magpie_messages_total{channel="test",outcome="answered"}')).toBe(1);
    expect(sumOf(after, "magpie_tool_calls_total", { tool: "file_list" })).toBe(1);
    expect(sumOf(after, "magpie_llm_requests_total", { result: "ok" })).toBe(2);
    expect(sumOf(after, "magpie_turn_seconds_count", { origin: "user" })).toBe(1);
    expect(after.get('magpie_cron_runs_total{job="nightly",status="ran"}')).toBe(1);

    // Idle: two scrapes 2 s apart. Magpie's own series neither move, appear nor vanish; prom-client's default
    // process_/nodejs_ metrics are the process's own weather (nodejs_active_resources{type="Timeout"} comes and
    // goes with any timer) and are exempt from every check alike. The loop lag is a measurement of the moment:
    // it must stay, but its value may change.
    // A timer alive at the first scrape and gone by the second, as any request's timeout is: it used to make
    // nodejs_active_resources{type="Timeout"} vanish on some runs; here on every run.
    setTimeout(() => {}, 1_000);
    const first = await scrape(url);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const second = await scrape(url);
    const own = (samples: Samples) => [...samples.keys()].filter((key) => !DEFAULT_METRIC.test(key));
    expect(own(first).length).toBeGreaterThan(10);
    const moved = own(second).filter(
      (key) => first.get(key) !== second.get(key) && !key.startsWith("magpie_event_loop_lag_seconds"),
    );
    expect(moved).toEqual([]);
    expect(own(first).filter((key) => !second.has(key))).toEqual([]);
  });
});

describe("GET /metrics counts trigger events", () => {
  it("a fired and a filtered webhook event move magpie_trigger_events_total", async () => {
    const secret = "w".repeat(32);
    const testApp = await startTestApp({
      llm: false,
      features: [triggersFeature, metricsFeature],
      config: {
        http: { metrics: { enabled: true } },
        triggers: {
          deploy: {
            on: { webhook: { secret } },
            when: "event.payload.action == 'completed'",
            do: { message: "Deployed" },
            deliver: { channel: "test", chat_id: "owner-chat" },
          },
        },
      },
    });
    try {
      for (const action of ["completed", "queued"]) {
        const body = JSON.stringify({ action });
        const timestamp = Math.floor(Date.now() / 1000);
        const response = await fetch(`${testApp.url}/hooks/deploy`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-magpie-timestamp": String(timestamp),
            "x-magpie-signature": signWebhook(secret, timestamp, body),
          },
          body,
        });
        expect(response.status).toBe(202);
      }
      const samples = await scrape(testApp.url);
      expect(samples.get('magpie_trigger_events_total{trigger="deploy",result="fired"}')).toBe(1);
      expect(samples.get('magpie_trigger_events_total{trigger="deploy",result="filtered"}')).toBe(1);
    } finally {
      await testApp.stop();
    }
  });
});

describe("GET /metrics access (attacks)", () => {
  let testApp: TestApp | undefined;
  afterEach(async () => {
    await testApp?.stop();
    testApp = undefined;
  });

  it.skipIf(!externalAddress)(
    "without a token: a client from a non-loopback address is refused, whatever it forwards",
    async () => {
      testApp = await startTestApp({
        features: [metricsFeature],
        config: { http: { host: "0.0.0.0", metrics: { enabled: true } } },
      });
      const port = testApp.app.http.address!.port;
      const external = `http://${externalAddress}:${port}`;
      const spoofs: Array<Record<string, string>> = [
        {},
        { "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1" },
      ];
      for (const headers of spoofs) {
        const response = await fetch(`${external}/metrics`, { headers });
        expect(response.status).toBe(403);
        expect(await response.text()).not.toMatch(/magpie_/);
      }
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
    },
  );

  it("with a token: a missing or wrong token is 401 from anywhere, and the token never reaches the logs", async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: "trace" },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    testApp = await startTestApp({
      features: [metricsFeature],
      logger,
      config: {
        http: { host: externalAddress ? "0.0.0.0" : "127.0.0.1", metrics: { enabled: true, token: TOKEN } },
      },
    });
    const port = testApp.app.http.address!.port;
    const hosts = ["127.0.0.1", ...(externalAddress ? [externalAddress] : [])];
    for (const host of hosts) {
      const url = `http://${host}:${port}/metrics`;
      expect((await fetch(url)).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}` } })).status).toBe(
        401,
      );
      expect((await fetch(url, { headers: { authorization: TOKEN } })).status).toBe(401);
      const good = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(good.status).toBe(200);
      expect(await good.text()).toMatch(/^# HELP /m);
    }
    expect(lines.some((line) => line.includes("metrics-unauthorized"))).toBe(true);
    expect(lines.filter((line) => line.includes(TOKEN.slice(0, 20)))).toEqual([]);
  });
});
