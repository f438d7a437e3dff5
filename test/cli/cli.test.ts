import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";
import { startTestApp } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

// `npm test` builds first (pretest), so the production bundle is what runs.
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

/** Environment without the developer's secrets or config: a clean env-only start. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "info", ...extra };
}

function run(args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; input?: string }) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [...MAGPIE_NODE_ARGS, ...args], {
      cwd: options.cwd,
      env: options.env ?? cleanEnv(),
    });
    children.push(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
    if (options.input !== undefined) child.stdin.end(options.input);
  });
}

describe("magpie CLI", () => {
  it("--version and version print the package version; they never start the bot", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-cli-"));
    const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    for (const args of [["--version"], ["version"], ["-v"]]) {
      const result = await run(args, { cwd });
      expect(result.code, args.join(" ")).toBe(0);
      expect(result.stdout).toBe(`magpie ${version}\n`);
    }
  });

  it("an unknown command or flag prints the usage and exits 2 (never starts the bot)", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-cli-"));
    for (const [args, problem] of [
      [["--verbose"], 'Unknown option "--verbose"'],
      [["strat"], 'Unknown command "strat"'],
      [["start", "--port", "80"], 'Unknown option "--port" for start'],
      [["chat", "now"], 'Unknown argument "now" for chat'],
    ] as const) {
      const result = await run([...args], { cwd });
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toContain(problem);
      expect(result.stderr).toContain("Usage: magpie [command]");
      expect(result.stdout).toBe("");
    }
    const help = await run(["--help"], { cwd });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("backup [--to <file>]");
  });

  it("config check: 0 for a valid config, 1 with every problem by key path for a bad one", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-cli-"));
    const ok = await run(["config", "check"], { cwd });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("Configuration is valid (environment variables only)");

    writeFileSync(
      path.join(cwd, "bad.yaml"),
      "channels:\n  telegram:\n    allowFrom: 5\nagent:\n  maxIterations: -1\n",
    );
    const bad = await run(["config", "check", "--config", "bad.yaml"], { cwd });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("channels.telegram.allowFrom: expected a list of user ids, got 5");
    expect(bad.stderr).toContain("agent.maxIterations:");
  });

  it("start refuses to run with an invalid config (non-zero exit, key path named)", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-cli-"));
    writeFileSync(path.join(cwd, "bad.yaml"), "secuirty:\n  level: high\n");
    const result = await run(["start", "--config", "bad.yaml"], { cwd });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("secuirty: unknown key — did you mean 'security'?");
  });

  it("start (not in a terminal): /readyz turns 200, SIGTERM exits 0", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-cli-"));
    writeFileSync(path.join(cwd, "magpie.yaml"), "http:\n  port: 0\n");
    const child = spawn(process.execPath, [...MAGPIE_NODE_ARGS, "start", "--config", "magpie.yaml"], {
      cwd,
      env: cleanEnv(),
    });
    children.push(child);
    let output = "";
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no http-listening line in: ${output}`)), 10_000);
      child.stdout.on("data", (chunk) => {
        output += chunk;
        const match = /"port":(\d+)[^\n]*"msg":"http-listening"/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
    });
    let ready: Response | undefined;
    for (let attempt = 0; attempt < 50; attempt++) {
      ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (ready.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(ready!.status).toBe(200);
    expect(await ready!.json()).toEqual({ ready: true, database: "open", down: [], channels: {} });
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    // Logs are JSON lines when not in a terminal.
    expect(
      output
        .split("\n")
        .filter(Boolean)
        .every((line) => line.startsWith("{")),
    ).toBe(true);

    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const started = Date.now();
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("chat: slash commands work in the terminal without an LLM; end of input exits 0", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-cli-"));
    const result = await run(["chat"], { cwd, input: "/help\nhello\n" });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Commands:");
    expect(result.stdout).toContain("/reset");
    expect(result.stdout).toContain("No language model is configured yet");
  });

  it("send: a running Magpie delivers a message queued by the CLI through its outbox", async () => {
    const channel = new RecordingChannel("telegram");
    const harness = await startTestApp({ llm: false, channel });
    try {
      const result = await run(["send", "telegram", "4242", "disk", "is", "fine"], {
        cwd: harness.dataDir,
        env: cleanEnv({ MAGPIE_DATA_DIR: harness.dataDir }),
      });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/✓ Sent to telegram:4242 \(message m\d+\)/);
      expect(channel.sent.map((entry) => [entry.target.chatId, entry.message.text])).toEqual([
        ["4242", "disk is fine"],
      ]);
    } finally {
      await harness.stop();
    }
  });
});
