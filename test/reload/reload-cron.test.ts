import { afterEach, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { startTestApp, type TestApp, testConfig } from "../helpers/harness.js";
import { waitFor } from "../mcp/mcp-helpers.js";

/** Config jobs of `cron.jobs` reloaded into a running Magpie (DESIGN.md → Configuration → Reload). */
describe("reload: cron jobs", () => {
  let test: TestApp | null = null;
  afterEach(async () => {
    await test?.stop();
    test = null;
  });

  const base = { tools: { shell: { sandbox: "off" } } } as const;
  const start = async (cron: Record<string, unknown>) => {
    test = await startTestApp({ llm: false, features: [schedulerFeature], config: { ...base, cron } });
    return test;
  };
  const reload = (running: TestApp, cron: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    running.app.reload(testConfig({ ...base, ...extra, cron } as ConfigInput, running.dataDir, {}));
  const scheduler = (running: TestApp) => running.app.context.services.scheduler as Scheduler;
  const reportsOf = (running: TestApp, text: string) =>
    running.channel!.sent.filter((sent) => sent.message.text.includes(text)).length;
  const deliver = { channel: "test", chatId: "c1" };

  it("adds a new config job and fires it; removing it stops it; a job made in chat is untouched", async () => {
    const running = await start({ jobs: [] });
    const chatJob = scheduler(running).add(
      { expression: "0 0 1 1 *", message: "chat job" },
      { createdFrom: { channel: "test", chatId: "c1" } },
    );

    const added = await reload(running, {
      jobs: [{ name: "tick", expression: "* * * * * *", message: "tick-report", deliver }],
    });
    expect(added.failures).toEqual([]);
    expect(added.applied).toContain("cron.jobs");
    expect(
      scheduler(running)
        .list()
        .map((job) => [job.name, job.source]),
    ).toEqual([
      ["message: chat job", "chat"],
      ["tick", "config"],
    ]);
    await waitFor(() => reportsOf(running, "tick-report") >= 1, "the added job's first report", 8_000);

    const removed = await reload(running, { jobs: [] });
    expect(removed.failures).toEqual([]);
    expect(
      scheduler(running)
        .list()
        .map((job) => job.id),
    ).toEqual([chatJob.id]);
    // Whatever was already on its way is delivered; after that no new run starts.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const settled = reportsOf(running, "tick-report");
    await new Promise((resolve) => setTimeout(resolve, 2_200));
    expect(reportsOf(running, "tick-report")).toBe(settled);
    expect(scheduler(running).get(chatJob.id)).toMatchObject({ name: "message: chat job", enabled: true });
  });

  it("re-arms a changed schedule at once and never fires one slot twice across reloads", async () => {
    const running = await start({
      jobs: [{ name: "beat", expression: "0 0 1 1 *", message: "beat-report", deliver }],
    });
    const id = scheduler(running).list()[0]!.id;
    const yearly = scheduler(running).get(id).next_run;

    // The timer was armed for next New Year; the new every-second schedule must fire within seconds.
    await reload(running, {
      jobs: [{ name: "beat", expression: "* * * * * *", message: "beat-report", deliver }],
    });
    expect(scheduler(running).get(id).next_run).not.toBe(yearly);
    await waitFor(() => reportsOf(running, "beat-report") >= 1, "the re-armed job", 8_000);

    // Reloads while it fires: unchanged, changed text, changed back. The job keeps its id (and its runs).
    for (const message of ["beat-report", "beat-report two", "beat-report", "beat-report two"]) {
      const result = await reload(running, {
        jobs: [{ name: "beat", expression: "* * * * * *", message, deliver }],
      });
      expect(result.failures).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 450));
    }
    await waitFor(() => scheduler(running).runs(id, 50).length >= 4, "several runs", 8_000);
    const runs = scheduler(running).runs(id, 50);
    const slots = runs.map((run) => run.scheduledAt);
    expect(new Set(slots).size).toBe(slots.length);
    expect(runs.every((run) => run.trigger === "schedule")).toBe(true);
    expect(
      scheduler(running)
        .list()
        .map((job) => job.id),
    ).toEqual([id]);
  });

  it("lets a run in progress finish and deliver when its job changes or is removed", async () => {
    const slow = { name: "slow", expression: "0 0 1 1 *", command: "sleep 1; echo slow-finished", deliver };
    const running = await start({ jobs: [slow] });
    const id = scheduler(running).list()[0]!.id;
    const run = scheduler(running).runNow(id);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await reload(running, { jobs: [{ ...slow, command: "echo changed" }] });
    expect((await run).status).toBe("ok");
    await waitFor(() => reportsOf(running, "slow-finished") === 1, "the changed job's run report");

    // Removing the job mid-run still lets that run finish and report.
    await reload(running, { jobs: [{ ...slow, command: "sleep 1; echo removed-finished" }] });
    const third = scheduler(running).runNow(id);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await reload(running, { jobs: [] });
    expect(scheduler(running).list()).toEqual([]);
    await third;
    await waitFor(() => reportsOf(running, "removed-finished") === 1, "the removed job's last report");
  });

  it("a one-shot changed while it runs still runs its new version once", async () => {
    const once = { name: "once", delay: "1s", deliver };
    const running = await start({ jobs: [{ ...once, command: "sleep 1; echo first-version" }] });
    await waitFor(
      () => scheduler(running).runs(scheduler(running).list()[0]!.id).length === 1,
      "the first run",
    );
    await reload(running, { jobs: [{ ...once, delay: "2s", command: "echo second-version" }] });
    await waitFor(() => reportsOf(running, "second-version") === 1, "the changed one-shot's run", 8_000);
    expect(reportsOf(running, "first-version")).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(reportsOf(running, "second-version")).toBe(1);
    expect(scheduler(running).list()[0]).toMatchObject({ status: "done" });
  });

  it("attack: a reloaded config job can't report to a chat Magpie may not post to; allowing the chat in the same file can", async () => {
    test = await startTestApp({ llm: false, features: [accessFeature, schedulerFeature], config: base });
    const running = test;
    const report = {
      jobs: [
        {
          name: "leak",
          expression: "0 9 * * *",
          message: "x",
          deliver: { channel: "telegram", chatId: 999 },
        },
      ],
    };
    const refused = await reload(running, report, { channels: { telegram: { allowFrom: [111] } } });
    expect(refused.failures).toEqual([
      {
        part: "scheduler",
        error: expect.stringMatching(
          /cron\.jobs\[0\]\.deliver\.chatId \("leak"\): chat 999 on telegram is not one Magpie may post to/,
        ),
      },
    ]);
    expect(scheduler(running).list()).toEqual([]);
    // The access feature reloads before the scheduler: the chat allowed in the same file is judged with it.
    const allowed = await reload(running, report, { channels: { telegram: { allowFrom: [111, 999] } } });
    expect(allowed.failures).toEqual([]);
    expect(
      scheduler(running)
        .list()
        .map((job) => job.name),
    ).toEqual(["leak"]);
  });

  it("refuses a bad job without touching the others, and takes cron settings live", async () => {
    const running = await start({
      jobs: [{ name: "keep", expression: "0 9 * * *", message: "kept", deliver }],
    });
    const before = scheduler(running).list();
    const bad = await reload(running, {
      jobs: [
        { name: "keep", expression: "0 10 * * *", message: "kept", deliver },
        { name: "broken", expression: "0 9 * * *", message: "x", timezone: "Mars/Olympus" },
      ],
    });
    expect(bad.failures).toEqual([
      { part: "scheduler", error: expect.stringMatching(/cron\.jobs\[1\] \("broken"\): Unknown time zone/) },
    ]);
    expect(scheduler(running).list()).toEqual(before);

    // cron.* settings are live; the time zone is restart-only: reported, and the jobs keep the running zone.
    const zoned = await reload(
      running,
      { runTimeoutSecs: 1, jobs: [{ name: "keep", expression: "0 9 * * *", message: "kept", deliver }] },
      { timezone: "Asia/Tokyo" },
    );
    expect(zoned).toMatchObject({ failures: [], needsRestart: ["timezone"] });
    expect(scheduler(running).list()).toEqual(before);

    // cron.runTimeoutSecs is read at the next run: a 3 s command is stopped after 1 s.
    const slow = scheduler(running).add({ expression: "0 0 1 1 *", command: "sleep 3" }, {});
    const run = await scheduler(running).runNow(slow.id);
    expect(run.status).toBe("timeout");
    expect(run.output).toMatch(/after 1 s \(cron\.runTimeoutSecs\)/);
  });
});
