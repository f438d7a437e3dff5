/**
 * History benchmark (issue 37): does a message cost the same on day 1 and day 300? The built CLI answers Telegram
 * messages (fake Bot API on 127.0.0.1) with a scripted LLM that answers at once, on databases seeded with the rows
 * of 10,000 / 100,000 / 1,000,000 earlier messages (bench/history-seed.ts) — beside the raw reference bot
 * (bench/reference-bot.ts: no libraries, no database). Every bot runs throughout and they take turns in rounds,
 * so a burst of load from elsewhere on the machine hits every size alike and the ratios hold.
 *
 * Per bot: the time from a message's arrival (pushed to the fake Bot API) to its LLM request and to its reply, one
 * message at a time; messages per second with 8 chats writing at once (12 messages in flight); the bot's CPU time
 * per message in that phase (steadier than wall time on a shared machine); RSS after it.
 * HISTORY_BENCH_SIZES=10000,100000 (default 10k, 100k, 1M), HISTORY_BENCH_MESSAGES (per phase, default 300),
 * HISTORY_BENCH_ROUNDS (default 6). While profiling: HISTORY_BENCH_CACHE=<dir> keeps each seeded database there and
 * starts later runs from a copy (seeding 1M takes a minute); HISTORY_BENCH_NODE_ARGS (e.g. "--cpu-prof
 * --cpu-prof-dir=/tmp/prof") is given to node for the Magpie bots; HISTORY_BENCH_CLI runs another build of the CLI (the
 * unbundled dist/src/cli/main.js names functions by their source file in a profile); HISTORY_BENCH_COMPARE=<main.js>
 * adds, at each size, a bot running that other build (an earlier commit's) on its own copy of the same database,
 * measured in the same rounds — a before/after under the same load.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
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
const CLI = process.env.HISTORY_BENCH_CLI ?? path.resolve(HERE, "../bundle/main.js");
const REFERENCE_BOT = path.resolve(HERE, "reference-bot.js");
const SIZES = (process.env.HISTORY_BENCH_SIZES ?? "10000,100000,1000000").split(",").map(Number);
const MESSAGES = Number(process.env.HISTORY_BENCH_MESSAGES ?? 300);
const WARM_UP = 30;
/** Each bot gets its messages in this many turns, alternating with the others. */
const ROUNDS = Number(process.env.HISTORY_BENCH_ROUNDS ?? 6);
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
    if (!request.url?.endsWith("/chat/completions"))
      return sendJson(response, 404, { error: { message: "no" } });
    const last = body.messages?.at(-1);
    const text = typeof last?.content === "string" ? last.content : "";
    const serial = MARKER.exec(text)?.[1];
    const timing = serial === undefined ? undefined : this.timings.get(Number(serial));
    if (timing && timing.llm === undefined) timing.llm = arrived;
    const content =
      text.startsWith("Conversation:") || text.startsWith("Earlier summary:")
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
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
};

async function waitReady(port: number, timeoutMs = 180_000): Promise<void> {
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

/** A bot under test with its own fakes: Magpie on a seeded database, or the reference bot. */
class Subject {
  private serial = 0;
  private readonly waiting = new Map<number, () => void>();
  readonly toLlm: number[] = [];
  readonly toReply: number[] = [];
  /** Throughput phases: messages, seconds and the bot's CPU ms. */
  readonly batches: Array<{ messages: number; seconds: number; cpuMs: number }> = [];
  rssMiB = 0;
  child: ChildProcess | null = null;

  constructor(
    readonly name: string,
    readonly stored: number | null,
    readonly telegram: FakeTelegram,
    readonly llm: ScriptedLlm,
    readonly seed: { dbMiB: number; ms: number } | null,
    readonly dir: string | null,
    readonly cli = CLI,
  ) {
    // Replies are noticed as the fake records them: no polling loop competes with the bots for the CPU.
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
        this.waiting.get(Number(match![1]))?.();
      }
      // The bench keeps no call history (a long run would hold every reply).
      calls.length = 0;
      return push(...items);
    };
  }

  send(chat: number): Promise<Timing> {
    const id = ++this.serial;
    const timing: Timing = { pushed: performance.now() };
    this.llm.timings.set(id, timing);
    const done = new Promise<Timing>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name}: no reply to h${id}x in 60 s`)), 60_000);
      this.waiting.set(id, () => {
        clearTimeout(timer);
        this.waiting.delete(id);
        this.llm.timings.delete(id);
        resolve(timing);
      });
    });
    const chatId = FIRST_CHAT + (chat % CHATS);
    this.telegram.pushMessage({
      chat: { id: chatId, type: "private" },
      from: { id: chatId },
      text: `h${id}x please check the backup and the sensor before tomorrow`,
    });
    return done;
  }

  /** `count` messages one at a time: arrival → LLM request and → reply. */
  async latency(count: number, keep = true): Promise<void> {
    for (let index = 0; index < count; index++) {
      const timing = await this.send(index);
      if (!keep) continue;
      this.toLlm.push(timing.llm! - timing.pushed);
      this.toReply.push(timing.replied! - timing.pushed);
    }
  }

  /** `count` messages from `CHATS` chats with `IN_FLIGHT` outstanding: messages/s and the bot's CPU. */
  async throughput(count: number): Promise<void> {
    const cpuBefore = cpuMs(this.child!.pid!);
    const started = performance.now();
    let sent = 0;
    const inFlight = new Set<Promise<Timing>>();
    while (sent < count || inFlight.size > 0) {
      while (sent < count && inFlight.size < IN_FLIGHT) {
        const pending = this.send(sent++);
        inFlight.add(pending);
        void pending.then(() => inFlight.delete(pending));
      }
      await Promise.race(inFlight);
    }
    const seconds = (performance.now() - started) / 1000;
    this.batches.push({ messages: count, seconds, cpuMs: cpuMs(this.child!.pid!) - cpuBefore });
    this.rssMiB = rssMiB(this.child!.pid!);
  }

  /** The median round: one burst of load from elsewhere slows one round, not the figure. */
  get perSecond(): number {
    return percentile(
      this.batches.map((batch) => batch.messages / batch.seconds),
      0.5,
    );
  }

  get cpuPerMessage(): number {
    const messages = this.batches.reduce((sum, batch) => sum + batch.messages, 0);
    return this.batches.reduce((sum, batch) => sum + batch.cpuMs, 0) / messages;
  }

  async close(): Promise<void> {
    if (this.child) await stop(this.child);
    await this.telegram.close();
    await this.llm.close();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

function pick(name: string): Record<string, string> {
  const value = process.env[name];
  return value === undefined ? {} : { [name]: value };
}

/** Seeds a database with `stored` messages' rows (before any bot runs, so seeding doesn't load the others). */
async function seeded(stored: number, cli = CLI): Promise<Subject> {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-bench-history-"));
  const dataDir = path.join(dir, "data");
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, "magpie.db");
  const cache = process.env.HISTORY_BENCH_CACHE;
  const cached = cache === undefined ? null : path.join(cache, `history-${stored}.db`);
  let seed = { ms: 0 };
  if (cached && existsSync(cached)) copyFileSync(cached, file);
  else {
    const db = openDatabase(file);
    seed = seedHistory(db, { messages: stored, chats: CHATS, firstChatId: FIRST_CHAT });
    db.close();
    if (cached) {
      mkdirSync(cache!, { recursive: true });
      copyFileSync(file, cached);
    }
  }
  const subject = new Subject(
    cli === CLI ? "Magpie" : `Magpie ${path.basename(path.dirname(path.dirname(cli)))}`,
    stored,
    await new FakeTelegram().start(),
    await new ScriptedLlm().start(),
    { dbMiB: statSync(file).size / 1024 / 1024, ms: seed.ms },
    dir,
    cli,
  );
  return subject;
}

async function startMagpie(subject: Subject): Promise<void> {
  const dir = subject.dir!;
  const port = await freePort();
  const allowFrom = Array.from({ length: CHATS }, (_, index) => FIRST_CHAT + index);
  writeFileSync(
    path.join(dir, "magpie.yaml"),
    JSON.stringify({
      dataDir: path.join(dir, "data"),
      workspace: path.join(dir, "workspace"),
      http: { host: "127.0.0.1", port },
      llm: { baseUrl: subject.llm.url, apiKey: "sk-bench", model: "test-model" },
      agent: { streaming: false },
      channels: {
        telegram: {
          token: subject.telegram.validToken,
          apiRoot: subject.telegram.apiRoot,
          pacing: false,
          allowFrom,
        },
      },
    }),
  );
  const nodeArgs = (process.env.HISTORY_BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  subject.child = spawn(process.execPath, [...nodeArgs, subject.cli, "start", "--config", "magpie.yaml"], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, LOG_LEVEL: "warn", ...pick("MALLOC_ARENA_MAX") },
    stdio: ["ignore", "ignore", "inherit"],
  });
  await waitReady(port);
}

async function startReference(subject: Subject): Promise<void> {
  const port = await freePort();
  subject.child = spawn(
    process.execPath,
    [REFERENCE_BOT, String(port), subject.telegram.apiRoot, subject.telegram.validToken, subject.llm.url],
    { env: { PATH: process.env.PATH }, stdio: "ignore" },
  );
  await waitReady(port);
}

export async function run(): Promise<void> {
  const load = loadavg()[0]!;
  const subjects: Subject[] = [];
  try {
    const compare = process.env.HISTORY_BENCH_COMPARE;
    for (const size of SIZES) {
      subjects.push(await seeded(size));
      if (compare) subjects.push(await seeded(size, path.resolve(compare)));
    }
    const reference = new Subject(
      "reference bot (no libraries, no database)",
      null,
      await new FakeTelegram().start(),
      await new ScriptedLlm().start(),
      null,
      null,
    );
    subjects.unshift(reference);
    await startReference(reference);
    for (const subject of subjects.slice(1)) await startMagpie(subject);
    for (const subject of subjects) await subject.latency(WARM_UP, false);
    // Interleaved rounds: a burst of load from elsewhere on the machine hits every size alike.
    const perRound = Math.ceil(MESSAGES / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (const subject of subjects) {
        await subject.latency(perRound);
        await subject.throughput(perRound);
      }
    }
  } finally {
    for (const subject of subjects) await subject.close();
  }
  report(subjects, load);
}

function report(subjects: Subject[], load: number): void {
  const count = (value: number) => Math.round(value).toLocaleString("en-US");
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  console.log(
    `${MESSAGES} messages one at a time (latency) and ${MESSAGES} from ${CHATS} chats with ${IN_FLIGHT} in flight ` +
      `(throughput; messages/s is the median round) per row, in ${ROUNDS} interleaved rounds after ${WARM_UP} warm-up messages; every bot runs ` +
      `throughout; scripted LLM answering at once; node ${process.version}; load average ${load.toFixed(1)} on ` +
      `${availableParallelism()} CPUs at start.\n`,
  );
  console.log(
    "| bot | stored messages | DB size (seeded in) | arrival → LLM request p50 / p95 | arrival → reply p50 / p95 | messages/s | bot CPU per message | RSS after |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of subjects) {
    console.log(
      `| ${row.name} | ${row.stored === null ? "—" : count(row.stored)} | ${row.seed === null ? "—" : `${row.seed.dbMiB.toFixed(0)} MiB (${(row.seed.ms / 1000).toFixed(1)} s)`} | ` +
        `${ms(percentile(row.toLlm, 0.5))} / ${ms(percentile(row.toLlm, 0.95))} | ${ms(percentile(row.toReply, 0.5))} / ${ms(percentile(row.toReply, 0.95))} | ` +
        `${row.perSecond.toFixed(1)} | ${row.cpuPerMessage.toFixed(2)} ms | ${row.rssMiB.toFixed(0)} MiB |`,
    );
  }
  const magpie = subjects.filter((row) => row.stored !== null && row.cli === CLI);
  const first = magpie[0];
  const largest = magpie.at(-1);
  if (!first || !largest || first === largest) return;
  const compare: Array<[string, number, number, boolean]> = [
    ["arrival → LLM request p50", percentile(first.toLlm, 0.5), percentile(largest.toLlm, 0.5), false],
    ["arrival → reply p50", percentile(first.toReply, 0.5), percentile(largest.toReply, 0.5), false],
    ["messages/s", first.perSecond, largest.perSecond, true],
    ["bot CPU per message (ms)", first.cpuPerMessage, largest.cpuPerMessage, false],
  ];
  console.log(
    `\n| target: ${count(largest.stored!)} within 20 % of ${count(first.stored!)} | ${count(first.stored!)} | ${count(largest.stored!)} | ratio | met |`,
  );
  console.log("|---|---:|---:|---:|---|");
  for (const [name, small, large, higherIsBetter] of compare) {
    const ratio = large / small;
    const within = higherIsBetter ? ratio >= 1 / 1.2 : ratio <= 1.2;
    console.log(
      `| ${name} | ${small.toFixed(2)} | ${large.toFixed(2)} | ×${ratio.toFixed(2)} | ${within ? "yes" : "**no**"} |`,
    );
  }
}
