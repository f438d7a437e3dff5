import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { advance, CHAT, makeRig, type Rig } from "./harness.js";

const T0 = Date.UTC(2026, 4, 4, 8, 0, 0); // Monday 2026-05-04 08:00:00Z

describe("scheduler firing", () => {
  let rig: Rig;
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
    rig = makeRig();
  });
  afterEach(async () => {
    await rig.cleanup();
    vi.useRealTimers();
  });

  it("fires a seconds-field cron job on time and delivers the report to the chat it came from", async () => {
    rig.scheduler.start();
    const job = rig.scheduler.add({ expression: "*/10 * * * * *", command: "uptime" }, { createdFrom: CHAT });
    expect(job.next_run).toBe("2026-05-04T08:00:10.000Z");
    await advance(9_999);
    expect(rig.executor.calls).toHaveLength(0);
    await advance(1);
    expect(rig.executor.calls).toHaveLength(1);
    await advance(20_000);
    expect(rig.executor.calls).toHaveLength(3);
    const runs = rig.scheduler.runs(job.id, 10);
    expect(runs.map((run) => run.scheduledAt)).toEqual([T0 + 30_000, T0 + 20_000, T0 + 10_000]);
    expect(runs.every((run) => run.status === "ok" && run.startedAt === run.scheduledAt)).toBe(true);
    expect(rig.messenger.sent).toHaveLength(3);
    expect(rig.messenger.sent[0]?.target).toEqual(CHAT);
    expect(rig.messenger.sent[0]?.origin).toBe("cron");
    expect(rig.messenger.sent[0]?.message.text).toMatch(/⏰ uptime.*#1.*ok/);
    expect(rig.scheduler.get(job.id).next_run).toBe("2026-05-04T08:00:40.000Z");
  });

  it("fires a one-shot delay job exactly once and marks it done", async () => {
    rig.scheduler.start();
    const job = rig.scheduler.add({ delay: "30m", message: "stretch your legs" }, { createdFrom: CHAT });
    expect(job.next_run).toBe("2026-05-04T08:30:00.000Z");
    await advance(30 * 60_000);
    await advance(2 * 3_600_000);
    expect(rig.executor.calls).toHaveLength(1);
    expect(rig.messenger.sent.map((sent) => sent.message.text)).toEqual(["stretch your legs"]);
    const view = rig.scheduler.get(job.id);
    expect(view.status).toBe("done");
    expect(view.next_run).toBeNull();
  });

  it("fires an `at` job at its ISO time, read in the job's time zone when it has no offset", async () => {
    rig.scheduler.start();
    const job = rig.scheduler.add(
      { at: "2026-05-04T12:00", timezone: "Europe/Berlin", message: "lunch" },
      { createdFrom: CHAT },
    );
    expect(job.next_run).toBe("2026-05-04T10:00:00.000Z");
    await advance(2 * 3_600_000);
    expect(rig.executor.calls).toHaveLength(1);
    expect(() => rig.scheduler.add({ at: "2026-05-01T00:00:00Z", message: "x" })).toThrow(/in the past/);
  });

  it("pauses and resumes", async () => {
    rig.scheduler.start();
    const job = rig.scheduler.add({ expression: "* * * * *", command: "date" }, { createdFrom: CHAT });
    await advance(60_000);
    expect(rig.executor.calls).toHaveLength(1);
    const paused = rig.scheduler.setEnabled(job.id, false);
    expect(paused.status).toBe("paused");
    expect(paused.next_run).toBeNull();
    await advance(5 * 60_000);
    expect(rig.executor.calls).toHaveLength(1);
    const resumed = rig.scheduler.setEnabled(job.id, true);
    expect(resumed.next_run).toBe("2026-05-04T08:07:00.000Z");
    await advance(60_000);
    expect(rig.executor.calls).toHaveLength(2);
  });

  it("never overlaps runs of one job: a run still going makes the next one skipped", async () => {
    rig.scheduler.start();
    rig.executor.hold();
    const job = rig.scheduler.add({ expression: "*/5 * * * * *", command: "slow" }, { createdFrom: CHAT });
    await advance(5_000);
    expect(rig.executor.calls).toHaveLength(1);
    await advance(10_000);
    expect(rig.executor.calls).toHaveLength(1);
    const skipped = rig.scheduler.runs(job.id, 10).filter((run) => run.status === "skipped");
    expect(skipped).toHaveLength(2);
    expect(skipped[0]?.output).toMatch(/previous run was still going/);
    rig.executor.release();
    await advance(5_000);
    expect(rig.executor.calls).toHaveLength(2);
    expect(rig.scheduler.runs(job.id, 10).filter((run) => run.status === "ok")).toHaveLength(2);
  });

  it("records every run and prunes history to maxRunHistory", async () => {
    await rig.cleanup();
    rig = makeRig({ settings: { maxRunHistory: 3 } });
    rig.scheduler.start();
    rig.executor.result = { ok: false, output: "disk full" };
    const job = rig.scheduler.add({ expression: "* * * * * *", command: "check" }, { createdFrom: CHAT });
    await advance(5_000);
    expect(rig.executor.calls).toHaveLength(5);
    const runs = rig.scheduler.runs(job.id, 50);
    expect(runs).toHaveLength(3);
    expect(runs[0]).toMatchObject({
      status: "error",
      output: "disk full",
      trigger: "schedule",
      durationMs: 0,
    });
    expect(runs[0]?.delivery?.chat?.status).toBe("sent");
    expect(runs[0]?.deliveryState).toBe("delivered");
  });

  it("stops a run that exceeds the timeout and records it as timeout", async () => {
    await rig.cleanup();
    rig = makeRig({ settings: { runTimeoutMs: 2_000 } });
    rig.scheduler.start();
    rig.executor.hold();
    const job = rig.scheduler.add({ expression: "0 * * * *", command: "hang" }, { createdFrom: CHAT });
    await advance(3_600_000);
    await advance(2_000);
    const [run] = rig.scheduler.runs(job.id, 1);
    expect(run).toMatchObject({ status: "timeout", durationMs: 2_000 });
    expect(rig.messenger.sent[0]?.message.text).toMatch(/timed out/);
  });

  it("delivers by mode: on_error stays quiet on success, none never sends", async () => {
    rig.scheduler.start();
    const quietJob = rig.scheduler.add(
      { expression: "* * * * *", command: "ok", deliver: { mode: "on_error" } },
      { createdFrom: CHAT },
    );
    rig.scheduler.add(
      { expression: "* * * * *", command: "ok", deliver: { mode: "none" } },
      { createdFrom: CHAT },
    );
    await advance(60_000);
    expect(rig.executor.calls).toHaveLength(2);
    expect(rig.messenger.sent).toHaveLength(0);
    rig.executor.result = { ok: false, output: "boom" };
    await advance(60_000);
    expect(rig.messenger.sent).toHaveLength(1);
    expect(rig.messenger.sent[0]?.message.text).toMatch(/failed[\s\S]*boom/);
    expect(rig.scheduler.runs(quietJob.id, 5)[1]?.delivery?.skipped).toBe("mode on_error");
  });

  it("delivers to another chat when deliver names one", async () => {
    rig.scheduler.start();
    rig.scheduler.add(
      { expression: "* * * * *", message: "to slack", deliver: { channel: "slack", chatId: "C42" } },
      { createdFrom: CHAT },
    );
    await advance(60_000);
    expect(rig.messenger.sent[0]?.target).toEqual({ channel: "slack", chatId: "C42" });
  });

  it("pauses a job that can no longer be scheduled and keeps firing the others", async () => {
    rig.scheduler.start();
    const healthy = rig.scheduler.add({ expression: "* * * * *", command: "ok" }, { createdFrom: CHAT });
    // A row written by an older version with an expression this one rejects.
    const broken = rig.jobs.insert({
      name: "legacy",
      schedule: { kind: "cron", expression: "every monday" },
      timezone: "UTC",
      kind: "message",
      payload: "x",
      deliver: { pushover: false, mode: "always" },
      enabled: true,
      source: "chat",
      creator: { identity: { channel: "local", userId: "owner", role: "owner" } },
      nextRunAt: T0 + 30_000,
      createdAt: T0,
    });
    await advance(120_000);
    expect(rig.scheduler.get(broken.id)).toMatchObject({ status: "paused", next_run: null });
    expect(rig.scheduler.runs(broken.id, 1)[0]).toMatchObject({
      status: "skipped",
      output: expect.stringMatching(/job paused: .*not a valid cron expression/),
    });
    expect(rig.scheduler.runs(healthy.id, 10)).toHaveLength(2);
  });

  it("rejects invalid schedules with the reason", () => {
    expect(() => rig.scheduler.add({ expression: "61 * * * *", command: "x" })).toThrow(
      /61 is an invalid expression for minute/,
    );
    expect(() => rig.scheduler.add({ delay: "soon", command: "x" })).toThrow(/30s, 30m, 2h, 1d/);
    expect(() => rig.scheduler.add({ expression: "* * * * *" })).toThrow(/command.*prompt.*message/);
    expect(() => rig.scheduler.add({ command: "x" })).toThrow(/exactly one schedule/);
    expect(rig.scheduler.list()).toHaveLength(0);
  });
});

describe("scheduler across restarts", () => {
  afterEach(() => vi.useRealTimers());

  it("runs a job missed during downtime once at startup, marked as caught up", async () => {
    vi.useFakeTimers({ now: T0 });
    let rig = makeRig();
    rig.scheduler.start();
    const job = rig.scheduler.add({ expression: "0 * * * *", command: "hourly" }, { createdFrom: CHAT });
    await advance(3_600_000); // 09:00 runs normally
    expect(rig.executor.calls).toHaveLength(1);
    await rig.shutdown();
    // Down from 09:00 to 12:30: 10:00, 11:00 and 12:00 were missed.
    vi.setSystemTime(Date.UTC(2026, 4, 4, 12, 30));
    rig = await rig.restart();
    rig.scheduler.start();
    await advance(0);
    expect(rig.executor.calls).toHaveLength(1);
    const [caughtUp] = rig.scheduler.runs(job.id, 1);
    expect(caughtUp).toMatchObject({
      trigger: "catch_up",
      status: "ok",
      scheduledAt: Date.UTC(2026, 4, 4, 10),
    });
    expect(rig.messenger.sent[0]?.message.text).toMatch(/caught up/);
    expect(rig.scheduler.get(job.id).next_run).toBe("2026-05-04T13:00:00.000Z");
    await advance(30 * 60_000);
    expect(rig.executor.calls).toHaveLength(2);
    expect(rig.scheduler.runs(job.id, 1)[0]?.trigger).toBe("schedule");
    await rig.cleanup();
  });

  it("records a missed run as missed when catchUp is off", async () => {
    vi.useFakeTimers({ now: T0 });
    let rig = makeRig({ settings: { catchUp: false } });
    rig.scheduler.start();
    const job = rig.scheduler.add({ delay: "1h", message: "one-shot" }, { createdFrom: CHAT });
    await rig.shutdown();
    vi.setSystemTime(T0 + 3 * 3_600_000);
    rig = await rig.restart();
    rig.scheduler.start();
    await advance(3_600_000);
    expect(rig.executor.calls).toHaveLength(0);
    expect(rig.scheduler.runs(job.id, 5)[0]).toMatchObject({ status: "missed", trigger: "catch_up" });
    expect(rig.scheduler.get(job.id).status).toBe("done");
    await rig.cleanup();
  });

  it("stops a run in progress on shutdown and records it as interrupted", async () => {
    vi.useFakeTimers({ now: T0 });
    const rig = makeRig();
    rig.scheduler.start();
    rig.executor.hold();
    const job = rig.scheduler.add({ expression: "* * * * *", command: "long" }, { createdFrom: CHAT });
    await advance(60_000);
    expect(rig.executor.calls).toHaveLength(1);
    await rig.scheduler.stop();
    expect(rig.scheduler.runs(job.id, 1)[0]).toMatchObject({
      status: "error",
      output: "interrupted: Magpie stopped while this run was going",
    });
    await rig.cleanup();
  });

  it("marks a run cut off by a crash as an error instead of leaving it running", async () => {
    vi.useFakeTimers({ now: T0 });
    let rig = makeRig();
    const job = rig.scheduler.add({ expression: "0 0 1 1 *", command: "x" }, { createdFrom: CHAT });
    rig.jobs.startRun(job.id, "schedule", T0, T0);
    rig = await rig.restart();
    rig.scheduler.start();
    expect(rig.scheduler.runs(job.id, 1)[0]).toMatchObject({
      status: "error",
      output: expect.stringMatching(/interrupted/),
    });
    await rig.cleanup();
  });
});

describe("scheduler time zones and DST", () => {
  afterEach(() => vi.useRealTimers());

  for (const [label, start, expected] of [
    [
      "spring forward (02:30 does not exist)",
      Date.UTC(2026, 2, 28, 12),
      ["2026-03-29T01:30:00.000Z", "2026-03-30T00:30:00.000Z"],
    ],
    [
      "fall back (02:30 happens twice)",
      Date.UTC(2026, 9, 24, 12),
      ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"],
    ],
  ] as const) {
    it(`runs a 02:30 Europe/Berlin job once on the ${label} day`, async () => {
      vi.useFakeTimers({ now: start });
      const rig = makeRig({ settings: { timezone: "Europe/Berlin", pollMs: 3_600_000 } });
      rig.scheduler.start();
      const job = rig.scheduler.add({ expression: "30 2 * * *", command: "nightly" }, { createdFrom: CHAT });
      await advance(2 * 86_400_000);
      const fired = rig.scheduler
        .runs(job.id, 10)
        .map((run) => new Date(run.startedAt).toISOString())
        .reverse();
      expect(fired).toEqual(expected);
      await rig.cleanup();
    });
  }
});
