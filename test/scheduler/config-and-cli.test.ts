import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { run as cronCli } from "../../src/cli/commands/cron.js";
import { parseConfig } from "../../src/config/load.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import { ConfigError } from "../../src/lib/errors.js";
import { specOfConfigJob } from "../../src/scheduler/config-jobs.js";
import { parseAddArguments } from "../../src/scheduler/cron-command.js";
import { Store } from "../../src/store/index.js";
import { CHAT, makeRig, type Rig } from "./harness.js";

function configError(raw: unknown): string[] {
  try {
    parseConfig(raw, { env: {}, cwd: tmpdir() });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe("cron config", () => {
  it("defaults catchUp on and 50 runs of history", () => {
    const config = parseConfig({}, { env: {}, cwd: tmpdir() });
    expect(config.cron).toMatchObject({ catchUp: true, maxRunHistory: 50, jobs: [] });
  });

  it("is strict: unknown keys, two schedules, no payload and duplicate names are errors", () => {
    expect(
      configError({ cron: { jobs: [{ name: "a", expression: "* * * * *", command: "x", comand: "y" }] } }),
    ).toEqual([expect.stringMatching(/^cron\.jobs\[0\]/)]);
    expect(
      configError({ cron: { jobs: [{ name: "a", expression: "* * * * *", delay: "1h", command: "x" }] } })[0],
    ).toMatch(/exactly one of expression/);
    expect(configError({ cron: { jobs: [{ name: "a", expression: "* * * * *" }] } })[0]).toMatch(
      /exactly one of command/,
    );
    const duplicate = { name: "a", expression: "* * * * *", command: "x" };
    expect(configError({ cron: { jobs: [duplicate, duplicate] } })[0]).toMatch(/duplicate job name "a"/);
  });
});

describe("config job sync", () => {
  let rig: Rig;
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.UTC(2026, 4, 4, 8) });
    rig = makeRig();
  });
  afterEach(async () => {
    await rig.cleanup();
    vi.useRealTimers();
  });

  const jobsOf = (raw: unknown[]): MagpieConfig["cron"]["jobs"] =>
    parseConfig({ cron: { jobs: raw } }, { env: {}, cwd: tmpdir() }).cron.jobs;

  it("adds, updates and removes config jobs by name and leaves chat jobs alone", () => {
    const chatJob = rig.scheduler.add({ expression: "0 9 * * *", command: "chat" }, { createdFrom: CHAT });
    const first = jobsOf([
      {
        name: "backup",
        expression: "0 3 * * *",
        command: "backup.sh",
        deliver: { channel: "telegram", chatId: 42 },
      },
      { name: "hello", delay: "1h", message: "hi" },
    ]).map(specOfConfigJob);
    expect(rig.scheduler.syncFromConfig(first)).toEqual({ added: 2, updated: 0, removed: 0 });
    expect(rig.scheduler.syncFromConfig(first)).toEqual({ added: 0, updated: 0, removed: 0 });
    const backupId = rig.scheduler.list().find((job) => job.name === "backup")!.id;

    const second = jobsOf([{ name: "backup", expression: "0 4 * * *", command: "backup.sh" }]).map(
      specOfConfigJob,
    );
    expect(rig.scheduler.syncFromConfig(second)).toEqual({ added: 0, updated: 1, removed: 1 });
    const jobs = rig.scheduler.list();
    expect(jobs.map((job) => job.name)).toEqual(["chat", "backup"]);
    expect(jobs[1]).toMatchObject({ id: backupId, schedule: "0 4 * * *", source: "config" });
    expect(jobs[0]?.id).toBe(chatJob.id);
  });

  it("does not run a finished config one-shot again after a restart", async () => {
    const specs = jobsOf([{ name: "hello", delay: "1m", message: "hi" }]).map(specOfConfigJob);
    rig.scheduler.syncFromConfig(specs);
    rig.scheduler.start();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(rig.executor.calls).toHaveLength(1);
    rig = await rig.restart();
    rig.scheduler.syncFromConfig(specs);
    rig.scheduler.start();
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    expect(rig.executor.calls).toHaveLength(0);
    expect(rig.scheduler.list()[0]?.status).toBe("done");
  });

  it("keeps a config one-shot whose `at` has passed instead of refusing to start", async () => {
    const specs = jobsOf([{ name: "launch", at: "2026-05-04T08:01:00Z", message: "go" }]).map(
      specOfConfigJob,
    );
    rig.scheduler.syncFromConfig(specs);
    rig.scheduler.start();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(rig.executor.calls).toHaveLength(1);
    rig = await rig.restart();
    expect(rig.scheduler.syncFromConfig(specs)).toEqual({ added: 0, updated: 0, removed: 0 });
    expect(rig.scheduler.list()[0]).toMatchObject({ name: "launch", status: "done" });
  });

  it("names the bad job when a config expression is invalid, changing nothing", () => {
    const specs = jobsOf([
      { name: "ok", expression: "0 3 * * *", command: "x" },
      { name: "broken", expression: "0 3 * * * * *", command: "x" },
    ]).map(specOfConfigJob);
    expect(() => rig.scheduler.syncFromConfig(specs)).toThrow(
      /cron\.jobs\[1\] \("broken"\).*expected 5 or 6 fields but got 7/,
    );
    expect(rig.scheduler.list()).toHaveLength(0);
  });
});

describe("/cron add argument parsing", () => {
  it("splits schedule and payload", () => {
    expect(parseAddArguments("0 8 * * * df -h")).toEqual({ expression: "0 8 * * *", command: "df -h" });
    expect(parseAddArguments("*/10 * * * * * uptime")).toEqual({
      expression: "*/10 * * * * *",
      command: "uptime",
    });
    expect(parseAddArguments("@daily prompt: summarize the logs")).toEqual({
      expression: "@daily",
      prompt: "summarize the logs",
    });
    expect(parseAddArguments("30m message: stretch")).toEqual({ delay: "30m", message: "stretch" });
  });
});

describe("magpie cron (CLI)", () => {
  let dir: string;
  let config: MagpieConfig;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), "magpie-cron-cli-"));
    config = parseConfig(
      { dataDir: dir, timezone: "UTC", channels: { telegram: { allowFrom: ["42"] } } },
      { env: {}, cwd: dir },
    );
  });
  afterEach(() => {
    vi.useRealTimers();
    rmSync(dir, { recursive: true, force: true });
  });

  async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = "";
    let err = "";
    const sink = (append: (text: string) => void) =>
      new Writable({
        write(chunk, _encoding, done) {
          append(String(chunk));
          done();
        },
      });
    const code = await cronCli(argv, {
      loadConfig: () => config,
      openStore: (loaded) => Store.open(loaded.dataDir),
      stdout: sink((text) => (out += text)),
      stderr: sink((text) => (err += text)),
    });
    return { code, out, err };
  }

  it("adds, lists, shows runs, requests a run the daemon picks up, and removes", async () => {
    const added = await cli(
      "add",
      "0 8 * * *",
      "df -h",
      "--channel",
      "telegram",
      "--chat",
      "42",
      "--name",
      "disk",
    );
    expect(added).toMatchObject({
      code: 0,
      out: expect.stringMatching(/Added job #1 "disk" \(0 8 \* \* \*, UTC\)/),
    });
    expect((await cli("list")).out).toMatch(
      /#1 disk \[active\] 0 8 \* \* \* \(UTC\) — shell: df -h — next .*T08:00:00\.000Z → telegram:42/,
    );
    expect((await cli("add", "61 0 * * *", "x")).err).toMatch(/61 is an invalid expression for minute/);
    expect((await cli("runs", "1")).out).toMatch(/has not run yet/);

    expect((await cli("run", "disk")).out).toMatch(/Requested a run of job #1/);
    vi.useFakeTimers();
    const daemon = makeRig({ dir });
    daemon.scheduler.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(daemon.executor.calls).toHaveLength(1);
    expect(daemon.scheduler.runs(1, 1)[0]).toMatchObject({ trigger: "manual", status: "ok" });
    await daemon.shutdown();
    vi.useRealTimers();
    expect((await cli("runs", "1")).out).toMatch(/run 1 .* ran .*\(manual\) — delivery delivered/);

    expect(await cli("remove", "1")).toMatchObject({ code: 0, out: 'Removed job #1 "disk".\n' });
    expect(await cli("remove", "1")).toMatchObject({ code: 1, err: expect.stringMatching(/No job "1"/) });
    expect((await cli("bogus")).code).toBe(2);
  });

  it("refuses a report chat the message tool could not post to (a stranger's), adding nothing", async () => {
    const refused = await cli("add", "30m", "cat magpie.yaml", "--channel", "telegram", "--chat", "666");
    expect(refused).toMatchObject({
      code: 1,
      err: expect.stringMatching(/chat 666 on telegram is not one Magpie may post to.*channels\.telegram/),
    });
    expect((await cli("list")).out).not.toMatch(/#1/);
  });
});
