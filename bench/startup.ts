/**
 * Start-up benchmark: time from launching `magpie start` to `/readyz` 200, and resident memory at idle.
 * Runs the built CLI (dist/) several times and reports medians.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { FakeDiscord } from "../test/fakes/discord.js";
import { FakeSlack } from "../test/fakes/slack.js";
import { FakeTelegram } from "../test/fakes/telegram.js";

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/cli/main.js");
const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 7);
const IDLE_MS = 2_000;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

async function once(channelsYaml = ""): Promise<{ readyMs: number; idleRssMiB: number }> {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-bench-"));
  const port = await freePort();
  writeFileSync(path.join(cwd, "magpie.yaml"), `http:\n  port: ${port}\n${channelsYaml}`);
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, "start", "--config", "magpie.yaml"], {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "warn" },
    stdio: "ignore",
  });
  let readyMs = Number.NaN;
  for (;;) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (response.status === 200) {
        readyMs = performance.now() - started;
        break;
      }
    } catch {
      // not listening yet
    }
    if (performance.now() - started > 15_000) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const idleRssMiB = rssKiB(child.pid!) / 1024;
  const exited = new Promise((resolve) => child.on("exit", resolve));
  child.kill("SIGTERM");
  await exited;
  rmSync(cwd, { recursive: true, force: true });
  return { readyMs, idleRssMiB };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function scenario(name: string, channelsYaml: string) {
  const results = [];
  for (let index = 0; index < RUNS; index++) results.push(await once(channelsYaml));
  return {
    name,
    ready: results.map((result) => result.readyMs),
    rss: results.map((result) => result.idleRssMiB),
  };
}

/** Telegram, Discord and Slack (Socket Mode) enabled, each connected to its protocol fake on 127.0.0.1. */
async function withChannelFakes<T>(use: (channelsYaml: string) => Promise<T>): Promise<T> {
  const [telegram, discord, slack] = await Promise.all([
    new FakeTelegram().start(),
    new FakeDiscord().start(),
    new FakeSlack().start(),
  ]);
  try {
    return await use(
      [
        "channels:",
        `  telegram: { token: "${telegram.validToken}", apiRoot: "${telegram.apiRoot}", pacing: false }`,
        `  discord: { token: "${discord.validToken}", apiBase: "${discord.apiBase}", pacing: false }`,
        `  slack: { botToken: "${slack.botToken}", appToken: "${slack.appToken}", apiUrl: "${slack.apiUrl}", pacing: false }`,
        "",
      ].join("\n"),
    );
  } finally {
    await Promise.all([telegram.close(), discord.close(), slack.close()]);
  }
}

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

export async function run(): Promise<void> {
  const scenarios = [await scenario("no chat channels", "")];
  scenarios.push(await withChannelFakes((yaml) => scenario("Telegram + Discord + Slack (fakes)", yaml)));
  scenarios.push(await scenario("two MCP servers (stdio), no chat channels", mcpServersYaml()));
  scenarios.push(
    await scenario(
      "dashboard enabled, no chat channels",
      // Appended right under `http: port:` in the generated config.
      "  dashboard: { enabled: true, token: bench-token-0123456789abcdef }\n",
    ),
  );
  scenarios.push(
    await scenario("browser enabled (not used yet), no chat channels", "browser:\n  enabled: true\n"),
  );
  console.log(
    `magpie start (built CLI, no LLM, all features on), ${RUNS} runs each, node ${process.version}\n`,
  );
  console.log("| scenario | launch → /readyz 200, median (min–max) | idle RSS after 2 s, median (min–max) |");
  console.log("|---|---|---|");
  for (const { name, ready, rss } of scenarios) {
    console.log(
      `| ${name} | ${median(ready).toFixed(0)} ms (${Math.min(...ready).toFixed(0)}–${Math.max(...ready).toFixed(0)}) | ${median(rss).toFixed(1)} MiB (${Math.min(...rss).toFixed(1)}–${Math.max(...rss).toFixed(1)}) |`,
    );
  }
  const [bare, full, mcp, dashboard, browser] = scenarios;
  console.log(
    `\nAll three channels cost ${(median(full!.rss) - median(bare!.rss)).toFixed(1)} MiB and ${(median(full!.ready) - median(bare!.ready)).toFixed(0)} ms more than none.`,
  );
  console.log(
    `Two MCP servers: ready in ${((median(mcp!.ready) / median(bare!.ready)) * 100).toFixed(0)} % of the time without them (target ≤ 110 %; they start after ready).`,
  );
  console.log(
    `The dashboard, when enabled, costs ${(median(dashboard!.rss) - median(bare!.rss)).toFixed(1)} MiB and ${(median(dashboard!.ready) - median(bare!.ready)).toFixed(0)} ms; disabled, none of it is loaded (the first row).`,
  );
  console.log(
    `The browser tool, enabled but not used yet, costs ${(median(browser!.rss) - median(bare!.rss)).toFixed(1)} MiB and ${(median(browser!.ready) - median(bare!.ready)).toFixed(0)} ms (Chromium and playwright-core start on first use).`,
  );
  console.log("For scale: OpenClaw is reported at ~1.5 s to ready and ~580 MB RSS.");
}
