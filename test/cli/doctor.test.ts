import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OpenAiFake, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";
import { hasWorkingSandbox } from "../helpers/requires.js";

let llm: OpenAiFake;
let telegram: FakeTelegram;

beforeAll(async () => {
  llm = await startOpenAiFake();
  telegram = await new FakeTelegram().start();
});
afterAll(async () => {
  await llm.close();
  await telegram.close();
});

function doctor(yaml: string) {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-doctor-"));
  writeFileSync(path.join(cwd, "magpie.yaml"), yaml);
  return new Promise<{ code: number | null; stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [...MAGPIE_NODE_ARGS, "doctor", "--config", "magpie.yaml"], {
      cwd,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
    let stdout = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.on("exit", (code) => resolve({ code, stdout }));
  });
}

const sandboxWorks = await hasWorkingSandbox();

describe("magpie doctor", () => {
  const workingSetup = () =>
    `llm: { baseUrl: "${llm.url}", apiKey: sk-test }\nchannels:\n  telegram: { token: "${telegram.validToken}", apiRoot: "${telegram.apiRoot}" }\n`;

  it("reports ✓ for a working setup", async () => {
    const result = await doctor(workingSetup());
    expect(result.stdout).toMatch(/^✓ config: /m);
    expect(result.stdout).toMatch(/^✓ database: .*magpie\.db \(wal, migrations applied\)/m);
    expect(result.stdout).toMatch(/^✓ llm: .* reachable \(model gpt-4o-mini\)/m);
    expect(result.stdout).toMatch(/^✓ telegram: authorized as @magpie_test_bot/m);
    // The sandbox line depends on this machine's bubblewrap (sandbox: auto); the next test asserts it.
    expect(result.stdout).not.toMatch(/^✗ (?!sandbox:)/m);
  });

  it.runIf(sandboxWorks)("with a working bubblewrap: ✓ sandbox, everything looks good, exit 0", async () => {
    const result = await doctor(workingSetup());
    expect(result.stdout).toMatch(/^✓ sandbox: bubblewrap sandbox active/m);
    expect(result.stdout).toContain("Everything looks good.");
    expect(result.code).toBe(0);
  });

  it("has an ntfy line: ✗ with the fix when only the url is set, ✓ naming the server (not the topic) when both are", async () => {
    const half = await doctor(`${workingSetup()}notify:\n  ntfy: { url: "http://127.0.0.1:9" }\n`);
    expect(half.stdout).toMatch(/^✗ ntfy: only the url is set/m);
    expect(half.stdout).toMatch(/NTFY_TOPIC/);
    const both = await doctor(
      `${workingSetup()}notify:\n  ntfy: { url: "http://127.0.0.1:9", topic: secret-topic-42 }\n`,
    );
    expect(both.stdout).toMatch(/^✓ ntfy: publishing to http:\/\/127\.0\.0\.1:9/m);
    expect(both.stdout).not.toContain("secret-topic-42");
  });

  it("reports ✗ with the fix for a bad LLM key, a rejected bot token and an unreachable server", async () => {
    const result = await doctor(
      `llm: { baseUrl: "${llm.url}", apiKey: sk-wrong }\nchannels:\n  telegram: { token: "999:WRONG", apiRoot: "${telegram.apiRoot}" }\n  discord: { token: x.y.z, apiBase: "http://127.0.0.1:9/api" }\n` +
        // Set, so the count doesn't depend on this machine's bubblewrap.
        "tools: { shell: { sandbox: off } }\n",
    );
    expect(result.stdout).toMatch(
      /^✗ llm: .*rejected the API key \(401\) — fix: check OPENAI_API_KEY or llm\.apiKey$/m,
    );
    expect(result.stdout).toMatch(
      /^✗ telegram: the token was rejected \(401\) — fix: check TELEGRAM_BOT_TOKEN/m,
    );
    expect(result.stdout).toMatch(/^✗ discord: cannot reach the API: .* — fix: /m);
    expect(result.stdout).toMatch(
      /^✗ sandbox: .*tools\.shell\.sandbox is off — fix: set tools\.shell\.sandbox: auto$/m,
    );
    expect(result.stdout).toContain("4 problem(s) found.");
    expect(result.code).toBe(1);
  });
});
