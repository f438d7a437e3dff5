import { readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ownerAlerter } from "../../src/app/owner-alert.js";
import { readReloadOutcome, reloadResultFile } from "../../src/app/reload-result.js";
import { ConfigReloader } from "../../src/app/reload-runner.js";
import { loadConfig } from "../../src/config/load.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import { silentLogger } from "../../src/log/logger.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * ConfigReloader against a real app and a real config file: a saved change (written the way editors do, by
 * renaming a new file over the old) is applied once after a quiet moment; a write that changes nothing is no
 * reload; an invalid file changes nothing, is reported with its key paths and the owner is told once.
 */

let running: TestApp | null = null;
let reloader: ConfigReloader | null = null;
afterEach(async () => {
  await reloader?.close();
  reloader = null;
  await running?.stop();
  running = null;
});

/** The file the running app's config came from, as the owner would have written it. */
function fileOf(testApp: TestApp, extra: Record<string, unknown> = {}): string {
  return JSON.stringify(
    {
      dataDir: testApp.dataDir,
      timezone: "UTC",
      http: { host: "127.0.0.1", port: 0 },
      llm: {
        baseUrl: testApp.llm!.url,
        apiKey: "sk-test",
        model: "test-model",
        maxRetries: 0,
        timeoutMs: 5_000,
      },
      ...extra,
      agent: { streaming: false, retryOutageForSecs: 0, ...(extra.agent as object | undefined) },
    },
    null,
    2,
  );
}

/** Replaces the file by renaming a new one over it, as editors save. */
function save(file: string, text: string): void {
  writeFileSync(`${file}.swp`, text);
  renameSync(`${file}.swp`, file);
}

async function setUp(debounceMs = 150) {
  running = await startTestApp({});
  const app = running;
  const file = path.join(app.dataDir, "magpie.yaml");
  writeFileSync(file, fileOf(app));
  const applied: MagpieConfig[] = [];
  const logger = silentLogger();
  reloader = new ConfigReloader({
    apply: (next) => {
      applied.push(next);
      return app.app.reload(next);
    },
    running: app.app.config,
    load: () => loadConfig({ configPath: file, env: {}, cwd: app.dataDir, loadDotenv: false }),
    logger,
    redactor: app.app.redactor,
    tellOwner: ownerAlerter(app.app.context, logger),
    debounceMs,
  });
  reloader.watch([file]);
  // The owner has written once: their DM is where alerts go.
  app.llm!.script(reply.text("hello"));
  await app.channel!.receive("hi");
  await app.channel!.waitForSent(1);
  return { app, file, applied };
}

describe("ConfigReloader", () => {
  it("a saved change is applied once after the quiet time; saving the same content again is no reload", async () => {
    const { app, file, applied } = await setUp();
    // Three quick saves (an editor's steps): one reload of the last.
    save(file, fileOf(app, { agent: { systemPrompt: "one" } }));
    save(file, fileOf(app, { agent: { systemPrompt: "two" } }));
    save(file, fileOf(app, { agent: { systemPrompt: "Be brief." } }));
    await waitFor(() => readReloadOutcome(app.dataDir), "the reload's outcome");
    expect(readReloadOutcome(app.dataDir)).toMatchObject({
      source: "file",
      ok: true,
      applied: ["agent.systemPrompt"],
      needsRestart: [],
      problems: [],
    });
    expect(app.app.config.agent.systemPrompt).toBe("Be brief.");
    expect(applied).toHaveLength(1);

    // Same bytes again, and a touch: nothing to reload.
    save(file, fileOf(app, { agent: { systemPrompt: "Be brief." } }));
    writeFileSync(file, readFileSync(file));
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(applied).toHaveLength(1);
  });

  it("an invalid file changes nothing, names the key path, and the owner is told once", async () => {
    const { app, file, applied } = await setUp();
    save(file, fileOf(app, { agent: { maxIterations: "lots" } }));
    await waitFor(() => readReloadOutcome(app.dataDir), "the reload's outcome");
    const outcome = readReloadOutcome(app.dataDir)!;
    expect(outcome.ok).toBe(false);
    expect(outcome.problems.join("\n")).toMatch(/^agent\.maxIterations: expected number/);
    expect(applied).toHaveLength(0);
    expect(app.app.config.agent.maxIterations).toBe(20);
    const told = await app.channel!.waitForSent(2);
    expect(told[1]!.target).toMatchObject({ channel: "test", chatId: "chat-1" });
    expect(told[1]!.message.text).toContain("invalid, so I kept running with the previous one");
    expect(told[1]!.message.text).toContain("agent.maxIterations");

    // The same problem saved again (another whitespace): not told twice. A SIGHUP-style request says it again
    // in the result, not to the owner.
    save(file, `${fileOf(app, { agent: { maxIterations: "lots" } })}\n\n`);
    const again = await reloader!.request("signal");
    expect(again.problems).toEqual(outcome.problems);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(app.channel!.sent).toHaveLength(2);

    // Fixed: applied, and a later broken file is told again.
    save(file, fileOf(app, { agent: { maxIterations: 7 } }));
    await waitFor(() => app.app.config.agent.maxIterations === 7, "the fixed file applied");
    save(file, fileOf(app, { agent: { maxIterations: -1 } }));
    await app.channel!.waitForSent(3);
    expect(app.channel!.sent[2]!.message.text).toContain("agent.maxIterations");
    expect(app.app.config.agent.maxIterations).toBe(7);
  });

  it("a restart-only change is reported with the value the running Magpie keeps; secrets stay hidden", async () => {
    const { app } = await setUp();
    const file = path.join(app.dataDir, "magpie.yaml");
    writeFileSync(
      file,
      fileOf(app, {
        http: { host: "127.0.0.1", port: 18_787 },
        llm: { baseUrl: app.llm!.url, apiKey: "sk-rotated-9876543210", model: "test-model", maxRetries: 0 },
      }),
    );
    const outcome = await reloader!.request("signal");
    expect(outcome.needsRestart).toEqual([
      { path: "http.port", running: "0" },
      { path: "llm.apiKey", running: "[REDACTED]" },
      { path: "llm.timeoutMs", running: "5000" },
    ]);
    expect(outcome.applied).toEqual([]);
    expect(readFileSync(reloadResultFile(app.dataDir), "utf8")).not.toContain("sk-test");
    expect(readFileSync(reloadResultFile(app.dataDir), "utf8")).not.toContain("sk-rotated");
  });
});
