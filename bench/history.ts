/**
 * History benchmark (issue 37): does a message cost the same on day 1 and day 300? The built CLI answers Telegram
 * messages (fake Bot API on 127.0.0.1) with a scripted LLM that answers at once, on a database seeded with the
 * rows of 10,000 / 100,000 / 1,000,000 earlier messages (bench/history-seed.ts) — and, in the same run, the raw
 * reference bot (bench/reference-bot.ts: no database at all), so the ratios hold on a noisy machine.
 *
 * Per size: the time from a message's arrival (pushed to the fake Bot API) to its LLM request and to its reply,
 * one message at a time; messages per second with 8 chats writing at once (12 messages in flight); the bot's
 * CPU time per message in that phase (steadier than wall time on a shared machine); RSS after it.
 * Sizes: HISTORY_BENCH_SIZES=10000,100000 (default 10k, 100k, 1M); messages per phase: HISTORY_BENCH_MESSAGES.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openDatabase } from "../src/store/database.js";
import { readBody, sendJson } from "../test/fakes/http-util.js";
import { FakeTelegram, type TelegramCall } from "../test/fakes/telegram.js";
import { seedHistory } from "./history-seed.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.resolve(HERE, "../bundle/main.js");
const REFERENCE_BOT = path.resolve(HERE, "reference-bot.js");
const SIZES = (process.env.HISTORY_BENCH_SIZES ?? "10000,100000,1000000").split(",").map(Number);
const MESSAGES = Number(process.env.HISTORY_BENCH_MESSAGES ?? 300);
const WARM_UP = 30;
const CHATS = 8;
const IN_FLIGHT = 12;
const FIRST_CHAT = 9_000;
const MARKER = /\bh(\d+)x\b/;

/** Arrival, LLM request and reply times of one message, in this process's `performance.now()`. */
interface Timing {
  pushed: number;
  llm?: number;
  replied?: number;
}

/** An OpenAI-compatible server that answers at once and notes when each message's request arrived. */
class ScriptedLlm {
  readonly timings = new Map<number, Timing>();
  private readonly server = http.createServer((request, response) => void this.handle(request, response));
  private port = 0;

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const arrived = performance.now();
    const body = JSON.parse(await readBody(request)) as {
      messages?: Array<{ role: string; content?: unknown }>;
    };
    if (!request.url?.endsWith("/chat/completions")) return sendJson(response, 404, { error: { message: "no" } });
    const last = body.messages?.at(-1);
    const text = typeof last?.content === "string" ? last.content : "";
    const serial = MARKER.exec(text)?.[1];
    const timing = serial === undefined ? undefined : this.timings.get(Number(serial));
    if (timing && timing.llm === undefined) timing.llm = arrived;
    const content = text.startsWith("Conversation:") || text.startsWith("Earlier summary:")
      ? "The owner asked about backups and sensors."
      : `ok h${serial ?? 0}x`;
    sendJson(response, 200, {
      id: `history-${serial ?? 0}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "test-model",
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      usage: { prompt_tokens: 812, completion_tokens: 64, total_tokens: 876 },
    });
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** User + system CPU time of a process, in ms (from /proc; clock ticks are 100 Hz on Linux). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

const percentile = (values: number[], p: number): number => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
};

async function waitReady(port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
    await response?.arrayBuffer();
    if (response?.status === 200) return;
    if (performance.now() > deadline) throw new Error(`/readyz on ${port} never turned 200`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

interface Row {
  name: string;
  stored: number | null;
  dbMiB: number | null;
  seedMs: number | null;
  toLlm: number[];
  toReply: number[];
  perSecond: number;
  cpuPerMessage: number;
  rssMiB: number;
}

/**
 * Drives a running bot: warm-up, then `MESSAGES` one at a time (latency), then `MESSAGES` from 8 chats with
 * `IN_FLIGHT` outstanding (throughput, bot CPU).
 */
async function drive(name: string, child: ChildProcess, telegram: FakeTelegram, llm: ScriptedLlm) {
  let serial = 0;
  const waiting = new Map<number, () => void>();
  // Replies are noticed as the fake records them (no polling loop competing with the bot for the CPU).
  const calls = telegram.calls;
  const push = calls.push.bind(calls);
  calls.push = (...items: TelegramCall[]) => {
    const now = performance.now();
    for (const call of items) {
      if (call.method !== "sendMessage") continue;
      const match = MARKER.exec(String(call.body.text ?? ""));
      const timing = match ? llm.timings.get(Number(match[1])) : undefined;
      if (!timing || timing.replied !== undefined) continue;
      timing.replied = now;
      waiting.get(Number(match![1]))?.();
    }
    calls.length = 0;
    return push(...items);
  };
  const send = (chat: number): Promise<Timing> => {
    const id = ++serial;
    const timing: Timing = { pushed: performance.now() };
    llm.timings.set(id, timing);
    const done = new Promise<Timing>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: no reply to h${id}x in 60 s`)), 60_000);
      waiting.set(id, () => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(timing);
      });
    });
    const chatId = FIRST_CHAT + (chat % CHATS);
    telegram.pushMessage({
      chat: { id: chatId, type: "private" },
      from: { id: chatId },
      text: `h${id}x please check the backup and the sensor before tomorrow`,
    });
    return done;
  };

  for (let index = 0; index < WARM_UP; index++) await send(index);
  const latencies: Timing[] = [];
  for (let index = 0; index < MESSAGES; index++) latencies.push(await send(index));

  const cpuBefore = cpuMs(child.pid!);
  const started = performance.now();
  let sent = 0;
  const inFlight = new Set<Promise<Timing>>();
  while (sent < MESSAGES || inFlight.size > 0) {
    while (sent < MESSAGES && inFlight.size < IN_FLIGHT) {
      const pending = send(sent++);
      inFlight.add(pending);
      void pending.then(() => inFlight.delete(pending));
    }
    await Promise.race(inFlight);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuMs(child.pid!) - cpuBefore;
  calls.push = push;
  return {
    toLlm: latencies.map((timing) => timing.llm! - timing.pushed),
    toReply: latencies.map((timing) => timing.replied! - timing.pushed),
    perSecond: MESSAGES / seconds,
    cpuPerMessage: cpu / MESSAGES,
    rssMiB: rssMiB(child.pid!),
  };
}

async function magpieRow(stored: number): Promise<Row> {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-bench-history-"));
  const telegram = await new FakeTelegram().start();
  const llm = await new ScriptedLlm().start();
  try {
    const dataDir = path.join(dir, "data");
    mkdirSync(dataDir, { recursive: true });
    const file = path.join(dataDir, "magpie.db");
    const db = openDatabase(file);
    const seed = seedHistory(db, { messages: stored, chats: CHATS, firstChatId: FIRST_CHAT });
    db.close();
    const dbMiB = statSync(file).size / 1024 / 1024;
    const port = await freePort();
    const allowFrom = Array.from({ length: CHATS }, (_, index) => FIRST_CHAT + index);
    writeFileSync(
      path.join(dir, "magpie.yaml"),
      JSON.stringify({
        dataDir,
        workspace: path.join(dir, "workspace"),
        http: { host: "127.0.0.1", port },
        llm: { baseUrl: llm.url, apiKey: "sk-bench", model: "test-model" },
        agent: { streaming: false },
        channels: {
          telegram: { token: telegram.validToken, apiRoot: telegram.apiRoot, pacing: false, allowFrom },
        },
      }),
    );
    const child = spawn(process.execPath, [CLI, "start", "--config", "magpie.yaml"], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, LOG_LEVEL: "warn", ...pick("MALLOC_ARENA_MAX") },
      stdio: ["ignore", "ignore", "inherit"],
    });
    try {
      await waitReady(port);
      const measured = await drive(`${stored} stored`, child, telegram, llm);
      return { name: "Magpie", stored, dbMiB, seedMs: seed.ms, ...measured };
    } finally {
      await stop(child);
    }
  } finally {
    await telegram.close();
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function pick(name: string): Record<string, string> {
  const value = process.env[name];
  return value === undefined ? {} : { [name]: value };
}

async function referenceRow(): Promise<Row> {
  const telegram = await new FakeTelegram().start();
  const llm = await new ScriptedLlm().start();
  const port = await freePort();
  const child = spawn(process.execPath, [REFERENCE_BOT, String(port), telegram.apiRoot, telegram.validToken, llm.url], {
    env: { PATH: process.env.PATH },
    stdio: "ignore",
  });
  try {
    await waitReady(port);
    const measured = await drive("reference bot", child, telegram, llm);
    return { name: "reference bot (no libraries, no database)", stored: null, dbMiB: null, seedMs: null, ...measured };
  } finally {
    await stop(child);
    await telegram.close();
    await llm.close();
  }
}

export async function run(): Promise<void> {
  const load = loadavg()[0]!;
  const rows: Row[] = [await referenceRow()];
  for (const size of SIZES) rows.push(await magpieRow(size));
  const count = (value: number) => Math.round(value).toLocaleString("en-US");
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  console.log(
    `${MESSAGES} messages one at a time (latency) and ${MESSAGES} from ${CHATS} chats with ${IN_FLIGHT} in flight ` +
      `(throughput) per row, after ${WARM_UP} warm-up messages; scripted LLM answering at once; node ${process.version}; ` +
      `load average ${load.toFixed(1)} on ${availableParallelism()} CPUs at start.\n`,
  );
  console.log(
    "| bot | stored messages | DB size (seeded in) | arrival → LLM request p50 / p95 | arrival → reply p50 / p95 | messages/s | bot CPU per message | RSS after |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of rows) {
    console.log(
      `| ${row.name} | ${row.stored === null ? "—" : count(row.stored)} | ${row.dbMiB === null ? "—" : `${row.dbMiB.toFixed(0)} MiB (${(row.seedMs! / 1000).toFixed(1)} s)`} | ` +
        `${ms(percentile(row.toLlm, 0.5))} / ${ms(percentile(row.toLlm, 0.95))} | ${ms(percentile(row.toReply, 0.5))} / ${ms(percentile(row.toReply, 0.95))} | ` +
        `${row.perSecond.toFixed(1)} | ${row.cpuPerMessage.toFixed(2)} ms | ${row.rssMiB.toFixed(0)} MiB |`,
    );
  }
  const magpie = rows.filter((row) => row.stored !== null);
  const first = magpie[0];
  const largest = magpie.at(-1);
  if (!first || !largest || first === largest) return;
  const compare: Array<[string, number, number, boolean]> = [
    ["arrival → LLM request p50", percentile(first.toLlm, 0.5), percentile(largest.toLlm, 0.5), false],
    ["arrival → reply p50", percentile(first.toReply, 0.5), percentile(largest.toReply, 0.5), false],
    ["messages/s", first.perSecond, largest.perSecond, true],
    ["bot CPU per message", first.cpuPerMessage, largest.cpuPerMessage, false],
  ];
  console.log(`\n| ${count(largest.stored!)} vs ${count(first.stored!)} stored | ${count(first.stored!)} | ${count(largest.stored!)} | ratio | within 20 % |`);
  console.log("|---|---:|---:|---:|---|");
  for (const [name, small, large, higherIsBetter] of compare) {
    const ratio = large / small;
    const within = higherIsBetter ? ratio >= 1 / 1.2 : ratio <= 1.2;
    console.log(
      `| ${name} | ${small.toFixed(2)} | ${large.toFixed(2)} | ×${ratio.toFixed(2)} | ${within ? "yes" : "**no**"} |`,
    );
  }
}
