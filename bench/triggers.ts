/**
 * Triggers benchmark: event → message latency and memory under a 5,000-event flood. MQTT messages go through a
 * real mosquitto on a free port (in-process events when it isn't installed) into the trigger runtime: the CEL
 * predicate, the back-pressure gate and the `message` action up to the outbox hand-off. Three floods: every
 * event matches (latency p50/p99, no hourly cap), every event matches under the default cap (60/h: the rest
 * dropped), no event matches (0 messages).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import mqtt from "mqtt";
import { parseConfig } from "../src/config/load.js";
import { ownerIdentity } from "../src/core/identity.js";
import { silentLogger } from "../src/log/logger.js";
import { createActionRunner } from "../src/scheduler/action-runner.js";
import { Store } from "../src/store/index.js";
import type { TriggerDefinition } from "../src/triggers/trigger.js";
import { createTriggerActions } from "../src/triggers/trigger-actions.js";
import { TriggerRuntime } from "../src/triggers/trigger-runtime.js";

const EVENTS = Number(process.env.BENCH_TRIGGER_EVENTS ?? 5_000);

interface Broker {
  url: string;
  stop(): Promise<void>;
}

async function startBroker(): Promise<Broker | null> {
  const env = { ...process.env, PATH: `${process.env.PATH ?? ""}:/usr/sbin` };
  if (spawnSync("sh", ["-c", "command -v mosquitto"], { env }).status !== 0) return null;
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-bench-mqtt-"));
  const config = path.join(dir, "mosquitto.conf");
  writeFileSync(
    config,
    `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\nmax_inflight_messages 0\n`,
  );
  const child: ChildProcess = spawn("mosquitto", ["-c", config], { stdio: "ignore", env });
  const url = `mqtt://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 200; attempt++) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => resolve(!socket.destroy()));
      socket.once("error", () => resolve(false));
    });
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return {
    url,
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill();
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

interface FloodResult {
  name: string;
  events: number;
  messages: number;
  counts: { fired: number; filtered: number; errors: number; dropped: number };
  latencies: number[];
  heapPeakMb: string;
  heapAfterMb: string;
  seconds: number;
}

async function flood(
  name: string,
  broker: Broker | null,
  trigger: Pick<TriggerDefinition, "when" | "maxPerHour">,
  temperature: number,
  options: { events?: number; oneAtATime?: boolean } = {},
): Promise<FloodResult> {
  const total = options.events ?? EVENTS;
  const latencies: number[] = [];
  let messages = 0;
  const definition: TriggerDefinition = {
    name: "hot",
    on: { mqtt: { topic: "bench/+/temperature" } },
    ...(trigger.when ? { when: trigger.when } : {}),
    do: { message: "{{event.topic}}: {{event.payload.temperature}} °C" },
    deliver: { chat: { channel: "telegram", chatId: "777" }, pushover: false },
    cooldownSecs: 0,
    maxPerHour: trigger.maxPerHour,
    enabled: true,
    source: "config",
    creator: { identity: ownerIdentity("local") },
  };
  let sentAt = new Map<number, number>();
  const runtime = new TriggerRuntime({
    config: parseConfig(
      { dataDir: tmpdir(), timezone: "UTC", mqtt: { url: broker?.url ?? "mqtt://127.0.0.1:1" } },
      { env: {}, cwd: tmpdir() },
    ),
    logger: silentLogger(),
    now: () => Date.now(),
    kv: Store.open(":memory:").kv,
    mqttClientId: `bench-${process.pid}-${name}`,
    run: createTriggerActions({
      runner: createActionRunner({
        // The outbox hand-off is where "message" ends for the trigger: the send itself is the channel's.
        messenger: {
          send: (_target, message) => {
            const index = Number(/#(\d+)/.exec(message.text ?? "")?.[1] ?? -1);
            const started = sentAt.get(index);
            if (started !== undefined) latencies.push(performance.now() - started);
            return ++messages;
          },
          waitForDelivery: async () => "sent",
        },
        notifier: { configured: false, send: async () => "" },
        tools: { execute: async () => "", resolveToolSet: () => [] },
        agent: { run: async () => ({ ok: true, text: "" }) },
        authority: () => ({ roleOf: () => "owner", mayDeliver: () => true }),
        logger: silentLogger(),
        maxMessageLength: () => 4_000,
      }),
      runTimeoutMs: 60_000,
    }),
  });
  await runtime.put({
    ...definition,
    do: { message: "#{{event.payload.index}} {{event.topic}}: {{event.payload.temperature}} °C" },
  });
  await runtime.mqtt.settled();
  globalThis.gc?.();
  let heapPeak = process.memoryUsage().heapUsed;
  const sampler = setInterval(() => {
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  }, 20);
  const started = performance.now();
  sentAt = new Map();
  if (broker) {
    const client = await mqtt.connectAsync(broker.url, { clientId: `bench-pub-${process.pid}-${name}` });
    const sends: Promise<unknown>[] = [];
    for (let index = 0; index < total; index++) {
      sentAt.set(index, performance.now());
      if (options.oneAtATime) {
        const before = messages;
        await client.publishAsync("bench/attic/temperature", JSON.stringify({ index, temperature }), {
          qos: 1,
        });
        while (messages === before) await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      sends.push(
        client.publishAsync("bench/attic/temperature", JSON.stringify({ index, temperature }), { qos: 1 }),
      );
      if (index % 500 === 499) await Promise.all(sends.splice(0));
    }
    await Promise.all(sends);
    await client.endAsync();
  } else {
    for (let index = 0; index < total; index++) {
      sentAt.set(index, performance.now());
      runtime.handle("hot", {
        source: "mqtt",
        topic: "bench/attic/temperature",
        payload: { index, temperature },
        at: Date.now(),
      });
      if (index % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
    }
  }
  const deadline = Date.now() + 30_000;
  const judged = () => {
    const counts = runtime.list()[0]?.counts;
    return counts ? counts.fired + counts.filtered + counts.errors + counts.dropped : 0;
  };
  while (judged() < total && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  await runtime.engine.idle();
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  const counts = runtime.list()[0]?.counts ?? { fired: 0, filtered: 0, errors: 0, dropped: 0 };
  await runtime.close();
  globalThis.gc?.();
  return {
    name,
    events: total,
    messages,
    counts,
    latencies,
    heapPeakMb: mb(heapPeak),
    heapAfterMb: mb(process.memoryUsage().heapUsed),
    seconds,
  };
}

export async function run(): Promise<void> {
  const broker = await startBroker();
  try {
    globalThis.gc?.();
    const baseline = mb(process.memoryUsage().heapUsed);
    const results = [
      await flood(
        "one event at a time (200)",
        broker,
        { when: "event.payload.temperature > 30.0", maxPerHour: 1_000_000 },
        31.5,
        {
          events: 200,
          oneAtATime: true,
        },
      ),
      await flood(
        "every event matches, no cap",
        broker,
        { when: "event.payload.temperature > 30.0", maxPerHour: 1_000_000 },
        31.5,
      ),
      await flood(
        "every event matches, maxPerHour 60",
        broker,
        { when: "event.payload.temperature > 30.0", maxPerHour: 60 },
        31.5,
      ),
      await flood(
        "no event matches",
        broker,
        { when: "event.payload.temperature > 30.0", maxPerHour: 60 },
        22,
      ),
    ];
    console.log(
      `${EVENTS.toLocaleString("en")} MQTT events per flood (QoS 1, published in batches of 500) ${broker ? "through a real mosquitto" : "in process (mosquitto not installed)"}; heap at start ${baseline} MB (${process.version}, ${process.arch}).\n`,
    );
    console.log(
      "| flood | messages | fired | filtered | dropped | event → message p50 ms | p99 ms | events/s | heap peak MB | heap after MB |",
    );
    console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const result of results) {
      const { counts } = result;
      const p50 = result.latencies.length ? percentile(result.latencies, 0.5).toFixed(2) : "–";
      const p99 = result.latencies.length ? percentile(result.latencies, 0.99).toFixed(2) : "–";
      console.log(
        `| ${result.name} | ${result.messages} | ${counts.fired} | ${counts.filtered} | ${counts.dropped} | ${p50} | ${p99} | ${Math.round(result.events / result.seconds)} | ${result.heapPeakMb} | ${result.heapAfterMb} |`,
      );
    }
  } finally {
    await broker?.stop();
  }
}
