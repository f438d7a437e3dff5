/**
 * Hot-path benchmark (issue 35, cost): Magpie's own time from a message's arrival to its LLM request, and what one
 * tool-call step adds to a turn — beside the raw reference bot (bench/reference-bot.ts: no libraries, no database)
 * measured in the same run, so load from elsewhere on the machine hits both alike.
 *
 * Each bot has its own fake Telegram Bot API and its own scripted OpenAI-compatible LLM on 127.0.0.1 that answers at
 * once. The built CLI runs on a database seeded with the rows of 10,000 answered messages (bench/history-seed.ts:
 * history, memories to recall, trace rows) and a workspace with a few skills, so recall, the skills listing and the
 * history read do the work they do on a box that has been in use.
 *
 * - arrival → LLM request: the message is pushed to the fake Bot API; the time until the scripted LLM has read
 *   the bot's request. Magpie's own time = Magpie's median − the reference bot's median (the same long poll, JSON and
 *   HTTP round trips, which the reference bot does with nothing else).
 * - a step adds: Magpie's turns of `STEPS` tool-call steps (the LLM asks for `cron_list`, read-only and without file
 *   I/O, so what is measured is Magpie's step: dispatch, audit, journal and trace rows, the next request; then again
 *   with `file_read` of a small file — another each step — for a tool that goes to the disk), the
 *   tool runs, the step is journaled, the next LLM request goes out): the time from the LLM's answer leaving the
 *   scripted LLM to the next LLM request read — minus the reference bot's time from its LLM answer leaving to its
 *   `sendMessage` read by the fake Bot API (receiving one HTTP answer and sending the next request, nothing else).
 * - bot CPU per message: from /proc, over the plain messages (steadier than wall time on a shared machine).
 *
 * HOT_PATH_BENCH_MESSAGES (per bot and kind, default 300), HOT_PATH_BENCH_ROUNDS (default 6),
 * HOT_PATH_BENCH_GAP_MS (a pause before each message, default 0: the next message comes as the reply is read),
 * HOT_PATH_BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", for the Magpie bots),
 * HOT_PATH_BENCH_CLI (another build of the CLI; dist/src/cli/main.js names functions by source file in a profile),
 * HOT_PATH_BENCH_COMPARE=<main.js> adds a bot running that other build (an earlier commit's) in the same rounds.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { type AddressInfo, createServer } from "node:net";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openDatabase } from "../src/store/database.js";
import { readBody, sendJson } from "../test/fakes/http-util.js";
import { FakeTelegram, type TelegramCall } from "../test/fakes/telegram.js";
import { seedHistory } from "./history-seed.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.resolve(process.env.HOT_PATH_BENCH_CLI ?? path.resolve(HERE, "../bundle/main.js"));
const REFERENCE_BOT = path.resolve(HERE, "reference-bot.js");
const MESSAGES = Number(process.env.HOT_PATH_BENCH_MESSAGES ?? 300);
const ROUNDS = Number(process.env.HOT_PATH_BENCH_ROUNDS ?? 6);
const WARM_UP = 30;
/** A pause before each message (ms): a user's next message does not come within a millisecond of the reply. */
const GAP_MS = Number(process.env.HOT_PATH_BENCH_GAP_MS ?? 0);
/** Tool-call steps per turn in the step phase. */
const STEPS = 3;
const STORED = 10_000;
const CHATS = 8;
const FIRST_CHAT = 9_000;
const SKILLS = 6;
const MARKER = /\bh(\d+)x(?: s(\d+) ([a-z_]+))?/;
/** Words the messages are made of (those of the seeded history): each message asks about another pair. */
const TOPICS = [
  "backup",
  "disk",
  "garden",
  "sensor",
  "train",
  "invoice",
  "router",
  "camera",
  "dentist",
  "weather",
];
const topic = (id: number, slot: number) => TOPICS[(id * 7 + slot * 3) % TOPICS.length]!;
/** The tools of the step phases: the first is the target's. */
const STEP_TOOLS = ["cron_list", "file_read"] as const;
type StepTool = (typeof STEP_TOOLS)[number];

/** The call of step `done` with `tool` (arguments differ per step: the same call thrice in a turn is a loop). */
function stepCall(tool: string, done: number): string {
  return JSON.stringify(tool === "file_read" ? { path: `notes-${done}.txt` } : { step: done });
}

/** One message's times, in this process's `performance.now()`. */
interface Timing {
  pushed: number;
  /** When each LLM request of its turn was read, in order. */
  requests: number[];
  /** When each LLM answer of its turn had been handed to the socket, in order. */
  answered: number[];
  replied?: number;
}

/** An OpenAI-compatible server that answers at once: N tool calls for an `sN <tool>` message, then text. */
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
    const raw = await readBody(request);
    const read = performance.now();
    if (!request.url?.endsWith("/chat/completions"))
      return sendJson(response, 404, { error: { message: "no" } });
    const messages =
      (JSON.parse(raw) as { messages?: Array<{ role: string; content?: unknown }> }).messages ?? [];
    const user = messages.findLast((message) => message.role === "user");
    const text = typeof user?.content === "string" ? user.content : "";
    if (text.startsWith("Conversation:") || text.startsWith("Earlier summary:"))
      // A history compaction's summary request (not a message's turn).
      return sendJson(response, 200, {
        id: "hot-summary",
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: "test-model",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: "The owner asked about backups." },
            finish_reason: "stop",
          },
        ],
        usage: { prompt_tokens: 812, completion_tokens: 64, total_tokens: 876 },
      });
    const match = MARKER.exec(text);
    const serial = Number(match?.[1] ?? 0);
    const steps = Number(match?.[2] ?? 0);
    const tool = match?.[3] ?? "cron_list";
    const timing = this.timings.get(serial);
    timing?.requests.push(read);
    // This turn's tool results: after its user message (history holds earlier turns' too).
    const done = messages
      .slice(messages.lastIndexOf(user!))
      .filter((message) => message.role === "tool").length;
    const message =
      done < steps
        ? {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: `call-${serial}-${done}`,
                type: "function",
                function: { name: tool, arguments: stepCall(tool, done) },
              },
            ],
          }
        : { role: "assistant", content: `ok h${serial}x` };
    sendJson(response, 200, {
      id: `hot-${serial}-${done}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "test-model",
      choices: [{ index: 0, message, finish_reason: done < steps ? "tool_calls" : "stop" }],
      usage: { prompt_tokens: 812, completion_tokens: 64, total_tokens: 876 },
    });
    timing?.answered.push(performance.now());
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

const median = (values: number[]): number => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function waitReady(port: number, timeoutMs = 120_000): Promise<void> {
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

/** A bot under test with its own fakes. */
class Subject {
  private serial = 0;
  private readonly waiting = new Map<number, () => void>();
  /** Plain messages: arrival → LLM request, and LLM answer → reply read by the fake Bot API. */
  readonly toLlm: number[] = [];
  readonly answerToReply: number[] = [];
  /** Step messages, per tool: each LLM answer (a tool call) → the next LLM request, and the CPU of the turns. */
  readonly steps = new Map<StepTool, { gaps: number[]; cpuMs: number; turns: number }>(
    STEP_TOOLS.map((tool) => [tool, { gaps: [], cpuMs: 0, turns: 0 }]),
  );
  plainCpuMs = 0;
  plainCount = 0;
  child: ChildProcess | null = null;
  readonly telegram = new FakeTelegram();
  readonly llm = new ScriptedLlm();

  constructor(
    readonly name: string,
    readonly cli: string | null,
    readonly dir: string | null,
  ) {
    // Replies are noticed as the fake records them: no polling loop competes with the bots for the CPU.
    const calls = this.telegram.calls;
    const push = calls.push.bind(calls);
    calls.push = (...items: TelegramCall[]) => {
      const now = performance.now();
      for (const call of items) {
        if (call.method !== "sendMessage") continue;
        const match = MARKER.exec(String(call.body.text ?? ""));
        const timing = match ? this.llm.timings.get(Number(match[1])) : undefined;
        if (!timing || timing.replied !== undefined) continue;
        timing.replied = now;
        this.waiting.get(Number(match![1]))?.();
      }
      calls.length = 0;
      return push(...items);
    };
  }

  get magpie(): boolean {
    return this.cli !== null;
  }

  async start(): Promise<void> {
    await this.telegram.start();
    await this.llm.start();
    const port = await freePort();
    if (!this.cli) {
      this.child = spawn(
        process.execPath,
        [REFERENCE_BOT, String(port), this.telegram.apiRoot, this.telegram.validToken, this.llm.url],
        { env: { PATH: process.env.PATH }, stdio: "ignore" },
      );
      return waitReady(port);
    }
    const dir = this.dir!;
    writeFileSync(
      path.join(dir, "magpie.yaml"),
      JSON.stringify({
        dataDir: path.join(dir, "data"),
        workspace: path.join(dir, "workspace"),
        http: { host: "127.0.0.1", port },
        llm: { baseUrl: this.llm.url, apiKey: "sk-bench", model: "test-model" },
        agent: { streaming: false },
        channels: {
          telegram: {
            token: this.telegram.validToken,
            apiRoot: this.telegram.apiRoot,
            pacing: false,
            allowFrom: Array.from({ length: CHATS }, (_, index) => FIRST_CHAT + index),
          },
        },
      }),
    );
    const nodeArgs = (process.env.HOT_PATH_BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
    this.child = spawn(process.execPath, [...nodeArgs, this.cli, "start", "--config", "magpie.yaml"], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, LOG_LEVEL: "warn" },
      stdio: ["ignore", "ignore", "inherit"],
    });
    return waitReady(port);
  }

  send(index: number, steps: number, tool: StepTool = "cron_list"): Promise<Timing> {
    const id = ++this.serial;
    const timing: Timing = { pushed: performance.now(), requests: [], answered: [] };
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
    const chatId = FIRST_CHAT + (index % CHATS);
    this.telegram.pushMessage({
      chat: { id: chatId, type: "private" },
      from: { id: chatId },
      text: `h${id}x${steps > 0 ? ` s${steps} ${tool}` : ""} please check the ${topic(id, 1)} and the ${topic(id, 2)} before ${topic(id, 3)}`,
    });
    return done;
  }

  /** `count` messages one at a time; `keep` false for warm-up. */
  async plain(count: number, keep = true): Promise<void> {
    const cpuBefore = cpuMs(this.child!.pid!);
    for (let index = 0; index < count; index++) {
      if (GAP_MS > 0) await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      const timing = await this.send(index, 0);
      if (!keep) continue;
      this.toLlm.push(timing.requests[0]! - timing.pushed);
      this.answerToReply.push(timing.replied! - timing.answered.at(-1)!);
    }
    if (!keep) return;
    this.plainCpuMs += cpuMs(this.child!.pid!) - cpuBefore;
    this.plainCount += count;
  }

  /** `count` turns of `STEPS` calls of `tool` each, one at a time. */
  async stepped(tool: StepTool, count: number, keep = true): Promise<void> {
    const cpuBefore = cpuMs(this.child!.pid!);
    const phase = this.steps.get(tool)!;
    for (let index = 0; index < count; index++) {
      if (GAP_MS > 0) await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      const timing = await this.send(index, STEPS, tool);
      if (!keep) continue;
      if (timing.requests.length !== STEPS + 1)
        throw new Error(`${this.name}: a turn of ${STEPS} steps made ${timing.requests.length} LLM requests`);
      for (let step = 0; step < STEPS; step++)
        phase.gaps.push(timing.requests[step + 1]! - timing.answered[step]!);
    }
    if (!keep) return;
    phase.cpuMs += cpuMs(this.child!.pid!) - cpuBefore;
    phase.turns += count;
  }

  async close(): Promise<void> {
    if (this.child) await stop(this.child);
    await this.telegram.close();
    await this.llm.close();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Magpie bot's directory: a seeded database, a workspace with skills and the file the tool reads. */
function magpieDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-bench-hot-"));
  const dataDir = path.join(dir, "data");
  mkdirSync(dataDir, { recursive: true });
  const db = openDatabase(path.join(dataDir, "magpie.db"));
  seedHistory(db, { messages: STORED, chats: CHATS, firstChatId: FIRST_CHAT });
  db.close();
  const workspace = path.join(dir, "workspace");
  for (let index = 0; index < SKILLS; index++) {
    const folder = path.join(workspace, "skills", `skill-${index}`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(
      path.join(folder, "SKILL.md"),
      `---\nname: skill-${index}\ndescription: How to do chore number ${index} on this box.\n---\n\n1. Look.\n2. Do it.\n`,
    );
  }
  // One file per step: the same call three times in a turn would be stopped as a loop.
  for (let step = 0; step < STEPS; step++)
    writeFileSync(path.join(workspace, `notes-${step}.txt`), `Step ${step}: the backup runs at 02:00.\n`);
  return dir;
}

export async function run(): Promise<void> {
  const load = loadavg();
  const subjects: Subject[] = [new Subject("reference bot (no libraries, no database)", null, null)];
  try {
    subjects.push(new Subject("Magpie", CLI, magpieDir()));
    const compare = process.env.HOT_PATH_BENCH_COMPARE;
    if (compare) subjects.push(new Subject(`Magpie ${compare}`, path.resolve(compare), magpieDir()));
    for (const subject of subjects) await subject.start();
    for (const subject of subjects) {
      await subject.plain(WARM_UP, false);
      if (subject.magpie) for (const tool of STEP_TOOLS) await subject.stepped(tool, WARM_UP / STEPS, false);
    }
    // Interleaved rounds: a burst of load from elsewhere on the machine hits every bot alike.
    const perRound = Math.ceil(MESSAGES / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (const subject of subjects) {
        await subject.plain(perRound);
        if (subject.magpie)
          for (const tool of STEP_TOOLS) await subject.stepped(tool, Math.ceil(perRound / STEPS));
      }
    }
  } finally {
    for (const subject of subjects) await subject.close();
  }
  report(subjects, load, loadavg());
}

function report(subjects: Subject[], before: number[], after: number[]): void {
  const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)} ms` : "—");
  const [reference] = subjects as [Subject];
  const floorToLlm = median(reference.toLlm);
  const floorStep = median(reference.answerToReply);
  console.log(
    `${reference.toLlm.length} plain messages per bot one at a time, and Magpie turns of ${STEPS} tool-call steps ` +
      `(${STEP_TOOLS.join(", then ")}), in ${ROUNDS} interleaved rounds after ${WARM_UP} warm-up messages; Magpie on a ` +
      `database of ${STORED.toLocaleString("en-US")} answered messages and ${SKILLS} skills; scripted LLM answering at once; ` +
      `node ${process.version}; load average ${before.map((value) => value.toFixed(1)).join(" ")} at start, ` +
      `${after.map((value) => value.toFixed(1)).join(" ")} at end, on ${availableParallelism()} CPUs. Medians.\n`,
  );
  const stepHeads = STEP_TOOLS.map((tool) => `LLM answer (${tool} call) → next LLM request`);
  console.log(
    `| bot | arrival → LLM request | LLM answer → reply read | ${stepHeads.join(" | ")} | bot CPU per plain message | ${STEP_TOOLS.map((tool) => `bot CPU per ${tool} step`).join(" | ")} |`,
  );
  console.log(
    `|---|---:|---:|${STEP_TOOLS.map(() => "---:|").join("")}---:|${STEP_TOOLS.map(() => "---:|").join("")}`,
  );
  for (const row of subjects) {
    const plainCpu = row.plainCpuMs / row.plainCount;
    const phases = STEP_TOOLS.map((tool) => row.steps.get(tool)!);
    console.log(
      `| ${row.name} | ${ms(median(row.toLlm))} | ${ms(median(row.answerToReply))} | ` +
        `${phases.map((phase) => ms(median(phase.gaps))).join(" | ")} | ${ms(plainCpu)} | ` +
        `${phases.map((phase) => ms(phase.turns > 0 ? (phase.cpuMs / phase.turns - plainCpu) / STEPS : Number.NaN)).join(" | ")} |`,
    );
  }
  console.log(
    "\nMagpie's own time = Magpie's median − the reference bot's median in this run. To the LLM request: both bots " +
      "get the message from the same fake long poll and send the same kind of request. A step: the reference bot's " +
      "LLM answer → its sendMessage read (one HTTP answer received, the next request sent, nothing else) is the floor " +
      `of Magpie's LLM answer → next LLM request; the target is measured with ${STEP_TOOLS[0]} (no file I/O). ` +
      "Bot CPU per step: (CPU of a stepped turn − of a plain one) / steps.\n",
  );
  console.log("| target | goal | measured | met |");
  console.log("|---|---|---:|---|");
  for (const row of subjects.slice(1)) {
    const own = median(row.toLlm) - floorToLlm;
    const label = subjects.length > 2 ? ` (${row.name})` : "";
    console.log(
      `| Magpie's own time, arrival → LLM request${label} | ≤ 3 ms | ${ms(own)} | ${own <= 3 ? "yes" : "**no**"} |`,
    );
    for (const [index, tool] of STEP_TOOLS.entries()) {
      const step = median(row.steps.get(tool)!.gaps) - floorStep;
      const goal = index === 0 ? "≤ 1 ms" : "(for comparison)";
      const met = index === 0 ? (step <= 1 ? "yes" : "**no**") : "";
      console.log(`| a step adds, ${tool}${label} | ${goal} | ${ms(step)} | ${met} |`);
    }
  }
}
