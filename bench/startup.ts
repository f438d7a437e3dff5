/**
 * Start-up benchmark: launch → `/readyz` 200, idle resident memory, the first reply after ready and the reply
 * latency after that — for Magpie (the built CLI) and, in the same run, for a raw reference bot with no libraries
 * (bench/reference-bot.ts), so the ratios hold on a noisy machine. Everything talks to the protocol fakes and the
 * OpenAI fake on 127.0.0.1; the fake LLM answers at once, so reply latency is the bot's own overhead plus one
 * localhost round trip to each fake.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { FakeDiscord } from "../test/fakes/discord.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../test/fakes/openai.js";
import { FakeSlack } from "../test/fakes/slack.js";
import { FakeTelegram } from "../test/fakes/telegram.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
// The production bundle (scripts/bundle.mjs), as `magpie start` runs it.
const CLI = path.resolve(HERE, "../bundle/main.js");
const REFERENCE_BOT = path.resolve(HERE, "reference-bot.js");
const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 7);
const REPLIES = 20;
const IDLE_MS = 2_000;
/**
 * Idle RSS once settled: V8's memory reducer returns start-up's pages to the system only 5–30 s after start
 * (measured: ~15 MiB), so the bots that answer are also sampled this long after ready.
 */
const SETTLED_MS = 30_000;
const OWNER = 1001;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const median = (values: number[]) => {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

interface Fakes {
  telegram: FakeTelegram;
  discord: FakeDiscord;
  slack: FakeSlack;
  llm: OpenAiFake;
}

/** How a scenario's process is launched, given a free port and the fakes. */
interface Launcher {
  name: string;
  /** Whether the process answers Telegram messages (then the reply columns are measured). */
  replies: boolean;
  launch(port: number, fakes: Fakes, cwd: string): ChildProcess;
}

function magpie(name: string, configYaml: (fakes: Fakes) => string, replies = false): Launcher {
  return {
    name,
    replies,
    launch(port, fakes, cwd) {
      writeFileSync(path.join(cwd, "magpie.yaml"), `http:\n  port: ${port}\n${configYaml(fakes)}`);
      return spawn(process.execPath, [CLI, "start", "--config", "magpie.yaml"], {
        cwd,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "warn" },
        stdio: "ignore",
      });
    },
  };
}

const referenceBot: Launcher = {
  name: "reference bot: Telegram, no libraries (floor)",
  replies: true,
  launch(port, fakes, cwd) {
    return spawn(
      process.execPath,
      [REFERENCE_BOT, String(port), fakes.telegram.apiRoot, fakes.telegram.validToken, fakes.llm.url],
      { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: "ignore" },
    );
  },
};

const llmYaml = (fakes: Fakes) =>
  `llm: { baseUrl: "${fakes.llm.url}", apiKey: sk-test, model: test-model }\nagent: { streaming: false }\n`;
const telegramYaml = (fakes: Fakes) =>
  `  telegram: { token: "${fakes.telegram.validToken}", apiRoot: "${fakes.telegram.apiRoot}", pacing: false, allowFrom: [${OWNER}] }\n`;
const discordYaml = (fakes: Fakes) =>
  `  discord: { token: "${fakes.discord.validToken}", apiBase: "${fakes.discord.apiBase}", pacing: false }\n`;
const slackYaml = (fakes: Fakes) =>
  `  slack: { botToken: "${fakes.slack.botToken}", appToken: "${fakes.slack.appToken}", apiUrl: "${fakes.slack.apiUrl}", pacing: false }\n`;

/** Two MCP servers from npm (server-everything and server-filesystem over stdio): they start after ready. */
function mcpServersYaml(): string {
  const modules = path.resolve("node_modules/@modelcontextprotocol");
  return [
    "mcpServers:",
    `  everything: { command: "${process.execPath}", args: ["${modules}/server-everything/dist/index.js", "stdio"] }`,
    `  files: { command: "${process.execPath}", args: ["${modules}/server-filesystem/dist/index.js", "${tmpdir()}"] }`,
    "",
  ].join("\n");
}

const LAUNCHERS: Launcher[] = [
  referenceBot,
  magpie("Magpie: Telegram", (fakes) => `${llmYaml(fakes)}channels:\n${telegramYaml(fakes)}`, true),
  magpie(
    "Magpie: Telegram + Discord + Slack",
    (fakes) => `${llmYaml(fakes)}channels:\n${telegramYaml(fakes)}${discordYaml(fakes)}${slackYaml(fakes)}`,
    true,
  ),
  magpie("Magpie: no chat channels", () => ""),
  magpie("Magpie: two MCP servers (stdio), no chat channels", mcpServersYaml),
  // Appended right under `http: port:` in the generated config.
  magpie(
    "Magpie: dashboard enabled, no chat channels",
    () => "  dashboard: { enabled: true, token: bench-token-0123456789abcdef }\n",
  ),
  magpie("Magpie: browser enabled (not used yet), no chat channels", () => "browser:\n  enabled: true\n"),
];

async function waitReady(port: number, started: number): Promise<number> {
  for (;;) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      await response.arrayBuffer();
      if (response.status === 200) return performance.now() - started;
    } catch {
      // not listening yet
    }
    if (performance.now() - started > 15_000) return Number.NaN;
    await sleep(5);
  }
}

/** Sends one Telegram message from the owner and resolves with the ms until the bot's sendMessage arrived. */
async function roundTrip(telegram: FakeTelegram, index: number): Promise<number> {
  const before = telegram.callsOf("sendMessage").length;
  const started = performance.now();
  telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text: `ping ${index}` });
  while (telegram.callsOf("sendMessage").length === before) {
    if (performance.now() - started > 10_000) return Number.NaN;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return performance.now() - started;
}

interface Sample {
  readyMs: number;
  idleRssMiB: number;
  settledRssMiB?: number;
  firstReplyMs?: number;
  replyMs?: number[];
  busyRssMiB?: number;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/**
 * One run: a launch measured for ready time and idle RSS (no message yet), and — for bots that answer — a second
 * launch that gets a message the instant it is ready (the first reply), then REPLIES more one after another.
 */
async function once(launcher: Launcher, fakes: Fakes): Promise<Sample> {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-bench-"));
  try {
    let port = await freePort();
    let started = performance.now();
    let child = launcher.launch(port, fakes, cwd);
    const readyMs = await waitReady(port, started);
    await sleep(IDLE_MS);
    const sample: Sample = { readyMs, idleRssMiB: rssMiB(child.pid!) };
    if (launcher.replies) {
      await sleep(SETTLED_MS - IDLE_MS);
      sample.settledRssMiB = rssMiB(child.pid!);
    }
    await stop(child);
    if (!launcher.replies) return sample;

    fakes.llm.script(...Array.from({ length: REPLIES + 1 }, () => reply.text("pong")));
    port = await freePort();
    started = performance.now();
    child = launcher.launch(port, fakes, cwd);
    await waitReady(port, started);
    sample.firstReplyMs = await roundTrip(fakes.telegram, 0);
    sample.replyMs = [];
    for (let index = 1; index <= REPLIES; index++)
      sample.replyMs.push(await roundTrip(fakes.telegram, index));
    sample.busyRssMiB = rssMiB(child.pid!);
    await stop(child);
    return sample;
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

interface Result {
  name: string;
  ready: number;
  readyRange: [number, number];
  rss: number;
  rssRange: [number, number];
  settledRss?: number;
  firstReply?: number;
  reply?: number;
  busyRss?: number;
}

function summarize(name: string, samples: Sample[]): Result {
  const ready = samples.map((sample) => sample.readyMs);
  const rss = samples.map((sample) => sample.idleRssMiB);
  const result: Result = {
    name,
    ready: median(ready),
    readyRange: [Math.min(...ready), Math.max(...ready)],
    rss: median(rss),
    rssRange: [Math.min(...rss), Math.max(...rss)],
  };
  if (samples[0]?.replyMs) {
    result.settledRss = median(samples.map((sample) => sample.settledRssMiB!));
    result.firstReply = median(samples.map((sample) => sample.firstReplyMs!));
    result.reply = median(samples.flatMap((sample) => sample.replyMs!));
    result.busyRss = median(samples.map((sample) => sample.busyRssMiB!));
  }
  return result;
}

async function startFakes(): Promise<Fakes> {
  const [telegram, discord, slack, llm] = await Promise.all([
    new FakeTelegram().start(),
    new FakeDiscord().start(),
    new FakeSlack().start(),
    startOpenAiFake(),
  ]);
  llm.requireKey = false;
  return { telegram, discord, slack, llm };
}

export async function run(): Promise<void> {
  const fakes = await startFakes();
  const samples = new Map<Launcher, Sample[]>(LAUNCHERS.map((launcher) => [launcher, []]));
  try {
    // Interleaved rounds: a burst of noise on the machine hits every scenario alike.
    for (let round = 0; round < RUNS; round++) {
      for (const launcher of LAUNCHERS) samples.get(launcher)!.push(await once(launcher, fakes));
    }
  } finally {
    await Promise.all([
      fakes.telegram.close(),
      fakes.discord.close(),
      fakes.slack.close(),
      fakes.llm.close(),
    ]);
  }
  const results = LAUNCHERS.map((launcher) => summarize(launcher.name, samples.get(launcher)!));
  const [floor, telegramOnly, threeChannels, bare, mcp, dashboard, browser] = results as [
    Result,
    ...Result[],
  ];

  const ms = (value: number | undefined) => (value === undefined ? "—" : `${value.toFixed(0)} ms`);
  const ratio = (value: number | undefined, reference: number | undefined) =>
    value === undefined || reference === undefined ? "" : ` (×${(value / reference).toFixed(1)})`;
  console.log(
    `${RUNS} interleaved runs per row, medians; node ${process.version}; fakes on 127.0.0.1, LLM answers at once, ` +
      `replies not streamed. Ratios (×) are to the reference bot measured in the same run.\n`,
  );
  console.log(
    "| scenario | launch → /readyz 200 (min–max) | RSS 2 s after ready (min–max) | idle RSS, settled (30 s) | first reply after ready | reply p50 | RSS after 21 replies |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const result of results) {
    console.log(
      `| ${result.name} | ${ms(result.ready)}${ratio(result.ready, floor.ready)} (${result.readyRange[0].toFixed(0)}–${result.readyRange[1].toFixed(0)}) | ` +
        `${result.rss.toFixed(1)} MiB${ratio(result.rss, floor.rss)} (${result.rssRange[0].toFixed(1)}–${result.rssRange[1].toFixed(1)}) | ` +
        `${result.settledRss === undefined ? "—" : `${result.settledRss.toFixed(1)} MiB${ratio(result.settledRss, floor.settledRss)}`} | ` +
        `${ms(result.firstReply)} | ${result.reply === undefined ? "—" : `${result.reply.toFixed(1)} ms`} | ` +
        `${result.busyRss === undefined ? "—" : `${result.busyRss.toFixed(1)} MiB`} |`,
    );
  }

  const overhead = telegramOnly!.reply! - floor.reply!;
  const targets: Array<[string, string, number, number]> = [
    ["3 channels: launch → ready", "≤ 700 ms", threeChannels!.ready, 700],
    ["3 channels: idle RSS, settled (30 s after ready)", "≤ 115 MiB", threeChannels!.settledRss!, 115],
    ["3 channels: RSS 2 s after ready (for comparison)", "≤ 115 MiB", threeChannels!.rss, 115],
    ["Telegram only: launch → ready", "≤ 300 ms", telegramOnly!.ready, 300],
    ["first reply after ready (Telegram only)", "≤ 40 ms", telegramOnly!.firstReply!, 40],
    ["first reply after ready (3 channels)", "≤ 40 ms", threeChannels!.firstReply!, 40],
    ["reply overhead p50 (Magpie − reference bot, Telegram only)", "≤ 12 ms", overhead, 12],
  ];
  console.log("\n| target | goal | measured | met |");
  console.log("|---|---|---|---|");
  for (const [name, goal, value, limit] of targets) {
    const unit = name.includes("RSS") ? " MiB" : " ms";
    console.log(`| ${name} | ${goal} | ${value.toFixed(1)}${unit} | ${value <= limit ? "yes" : "**no**"} |`);
  }
  console.log(
    `\nTwo MCP servers: ready in ${((mcp!.ready / bare!.ready) * 100).toFixed(0)} % of the time without them (target ≤ 110 %; they start after ready).`,
  );
  console.log(
    `The dashboard, when enabled, costs ${(dashboard!.rss - bare!.rss).toFixed(1)} MiB and ${(dashboard!.ready - bare!.ready).toFixed(0)} ms; disabled, none of it is loaded.`,
  );
  console.log(
    `The browser tool, enabled but not used yet, costs ${(browser!.rss - bare!.rss).toFixed(1)} MiB and ${(browser!.ready - bare!.ready).toFixed(0)} ms (Chromium and playwright-core start on first use).`,
  );
  console.log("For scale: OpenClaw, measured on this machine, takes 13 s to start and 1.1 GB RSS.");
}
