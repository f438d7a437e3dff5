import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { type CronRunEvent, eventPublisher, magpieEvents } from "../../src/core/events.js";
import { formatRuns } from "../../src/scheduler/format-text.js";
import { JobStore } from "../../src/scheduler/job-store.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { migrate, openDatabase } from "../../src/store/database.js";
import { migrations } from "../../src/store/migrations/index.js";
import { startTestApp } from "../helpers/harness.js";
import { advance, CHAT, makeRig, type Rig } from "./harness.js";

const T0 = Date.UTC(2026, 4, 4, 8, 0, 0); // Monday 2026-05-04 08:00:00Z
const HOUR = 3_600_000;

/** A rig whose scheduler publishes on an app id of its own, and the cron events it published. */
function observedRig(settings: Parameters<typeof makeRig>[0] = {}): { rig: Rig; seen: CronRunEvent[] } {
  const app = `cron-outcomes-${Math.random()}`;
  const seen: CronRunEvent[] = [];
  unsubscribers.push(magpieEvents.cronRun.subscribe(app, (event) => seen.push(event)));
  return { rig: makeRig({ ...settings, events: eventPublisher(app) }), seen };
}

const unsubscribers: Array<() => void> = [];

describe("cron outcomes: every due slot is ran, failed, missed or skipped", () => {
  const rigs: Rig[] = [];
  afterEach(async () => {
    for (const rig of rigs.splice(0)) await rig.cleanup();
    for (const unsubscribe of unsubscribers.splice(0)) unsubscribe();
    vi.useRealTimers();
  });

  it("publishes ran, failed and skipped with the lag after the due time", async () => {
    vi.useFakeTimers({ now: T0 });
    const { rig, seen } = observedRig();
    rigs.push(rig);
    rig.scheduler.start();
    const job = rig.scheduler.add(
      { name: "probe", expression: "*/5 * * * * *", command: "x" },
      { createdFrom: CHAT },
    );
    await advance(5_000);
    rig.executor.result = { ok: false, output: "boom" };
    await advance(5_000);
    rig.executor.hold();
    await advance(10_000); // 08:00:15 starts and holds; 08:00:20 finds it still going
    expect(seen.map((event) => event.status)).toEqual(["ran", "failed", "skipped"]);
    expect(seen[0]).toMatchObject({ jobId: String(job.id), name: "probe", lagSeconds: 0 });
    rig.executor.release();
    await advance(0);
    expect(seen.map((event) => event.status)).toEqual(["ran", "failed", "skipped", "failed"]);
    expect(formatRuns(job.id, rig.scheduler.runs(job.id, 10))).toMatch(/skipped[\s\S]*failed[\s\S]*ran/);
  });

  it("catchUp off: the slots missed while down are one missed run, told on_error with the count", async () => {
    vi.useFakeTimers({ now: T0 });
    let { rig } = observedRig({ settings: { catchUp: false } });
    rig.scheduler.start();
    const loud = rig.scheduler.add(
      { name: "backup", expression: "0 * * * *", command: "backup", deliver: { mode: "on_error" } },
      { createdFrom: CHAT },
    );
    const quiet = rig.scheduler.add(
      { name: "digest", expression: "0 * * * *", command: "digest", deliver: { mode: "on_success" } },
      { createdFrom: CHAT },
    );
    await rig.shutdown();
    // Down from 08:00 to 11:30: 09:00, 10:00 and 11:00 were missed.
    vi.setSystemTime(T0 + 3.5 * HOUR);
    const app = `cron-outcomes-restart-${Math.random()}`;
    const seen: CronRunEvent[] = [];
    unsubscribers.push(magpieEvents.cronRun.subscribe(app, (event) => seen.push(event)));
    rig = makeRig({ dir: rig.dir, settings: { catchUp: false }, events: eventPublisher(app) });
    rigs.push(rig);
    rig.scheduler.start();
    await advance(0);
    expect(rig.executor.calls).toHaveLength(0);
    const [missed] = rig.scheduler.runs(loud.id, 5);
    expect(missed).toMatchObject({ status: "missed", trigger: "catch_up", scheduledAt: T0 + HOUR });
    expect(missed?.output).toMatch(/3 slot\(s\) from 2026-05-04T09:00:00.000Z did not run/);
    // on_error covers missed: told once, in the chat the job came from; on_success stays quiet.
    expect(rig.messenger.sent).toHaveLength(1);
    expect(rig.messenger.sent[0]?.target).toEqual(CHAT);
    expect(rig.messenger.sent[0]?.message.text).toMatch(/⏰ backup.*missed[\s\S]*3 slot/);
    expect(rig.scheduler.runs(quiet.id, 5)[0]).toMatchObject({
      status: "missed",
      delivery: { skipped: "mode on_success" },
    });
    expect(seen.map((event) => [event.name, event.status])).toEqual([
      ["backup", "missed"],
      ["digest", "missed"],
    ]);
    expect(seen[0]?.lagSeconds).toBe(2.5 * 3600);
    expect(formatRuns(loud.id, rig.scheduler.runs(loud.id, 5))).toMatch(/missed \(caught up\)|missed/);
    // Firing resumes at the next slot.
    await advance(HOUR / 2);
    expect(rig.executor.calls).toHaveLength(2);
  });

  it("catchUp on: one run covers the downtime, the other slots are one missed run told in its report", async () => {
    vi.useFakeTimers({ now: T0 });
    let { rig } = observedRig();
    rig.scheduler.start();
    const job = rig.scheduler.add(
      { name: "hourly", expression: "0 * * * *", command: "x" },
      { createdFrom: CHAT },
    );
    await rig.shutdown();
    vi.setSystemTime(T0 + 3.5 * HOUR);
    const app = `cron-outcomes-catchup-${Math.random()}`;
    const seen: CronRunEvent[] = [];
    unsubscribers.push(magpieEvents.cronRun.subscribe(app, (event) => seen.push(event)));
    rig = makeRig({ dir: rig.dir, events: eventPublisher(app) });
    rigs.push(rig);
    rig.scheduler.start();
    await advance(0);
    expect(rig.executor.calls).toHaveLength(1);
    const [caughtUp, missed] = rig.scheduler.runs(job.id, 5);
    expect(caughtUp).toMatchObject({ status: "ok", trigger: "catch_up", scheduledAt: T0 + HOUR });
    expect(missed).toMatchObject({ status: "missed", scheduledAt: T0 + 2 * HOUR, deliveryState: "none" });
    expect(missed?.output).toMatch(/2 more slot\(s\) passed while Magpie was down/);
    // One report only: the catch-up run's.
    expect(rig.messenger.sent).toHaveLength(1);
    expect(rig.messenger.sent[0]?.message.text).toMatch(/caught up/);
    expect(seen.map((event) => event.status)).toEqual(["missed", "ran"]);
    expect(seen[1]?.lagSeconds).toBe(2.5 * 3600);
  });

  it("a tick held up past several slots runs once and records the others as missed", async () => {
    vi.useFakeTimers({ now: T0 });
    const { rig, seen } = observedRig();
    rigs.push(rig);
    rig.scheduler.start();
    const job = rig.scheduler.add(
      { name: "minutely", expression: "* * * * *", command: "x" },
      { createdFrom: CHAT },
    );
    // The box sleeps: the wall clock jumps 5 minutes, the timer fires late.
    vi.setSystemTime(T0 + 5 * 60_000 + 30_000);
    await advance(15_000);
    expect(rig.executor.calls).toHaveLength(1);
    const [ran, missed] = rig.scheduler.runs(job.id, 5);
    expect(ran).toMatchObject({ status: "ok", trigger: "schedule", scheduledAt: T0 + 60_000 });
    expect(missed).toMatchObject({ status: "missed", trigger: "schedule", scheduledAt: T0 + 120_000 });
    expect(missed?.output).toMatch(/4 slot\(s\) passed while the scheduler was held up/);
    expect(seen.map((event) => event.status)).toEqual(["missed", "ran"]);
    expect(seen[1]?.lagSeconds).toBeGreaterThanOrEqual(4 * 60);
  });
});

describe("cron outcomes on the dashboard", () => {
  it("the cron page names each run's outcome: missed, failed (timeout), ran", async () => {
    const token = "cron-outcomes-dashboard-token";
    const magpie = await startTestApp({
      llm: false,
      features: [schedulerFeature, dashboardFeature],
      config: { http: { dashboard: { enabled: true, token } } },
    });
    try {
      const scheduler = magpie.app.context.services.scheduler as Scheduler;
      const job = scheduler.add({ name: "nightly", expression: "0 3 * * *", message: "hi" });
      const jobs = new JobStore(magpie.app.store.db);
      jobs.recordSkipped(
        job.id,
        "catch_up",
        Date.now() - HOUR,
        Date.now(),
        "1 slot(s) did not run",
        "missed",
      );
      jobs.finishRun(
        jobs.startRun(job.id, "schedule", Date.now(), Date.now()),
        "timeout",
        "stopped",
        Date.now(),
      );
      await scheduler.runNow(job.id);
      const page = await fetch(`${magpie.url}/ui/cron`, { headers: { authorization: `Bearer ${token}` } });
      expect(page.status).toBe(200);
      const text = (await page.text()).replace(/\s+/g, " ");
      expect(text).toMatch(/<b>ran<\/b>.*<b>failed<\/b> \(timeout\).*<b>missed<\/b>/);
    } finally {
      await magpie.stop();
    }
  });
});

describe("migration 017", () => {
  it("keeps every run and index while allowing 'missed'", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-017-"));
    try {
      const db = openDatabase(
        path.join(dir, "magpie.db"),
        migrations.filter((migration) => migration.version < 17),
      );
      db.prepare(
        `INSERT INTO cron_jobs (name, schedule_kind, timezone, kind, payload, deliver, created_at, updated_at)
         VALUES ('j', 'once', 'UTC', 'message', 'x', '{}', 1, 1)`,
      ).run();
      db.prepare(
        "INSERT INTO cron_runs (job_id, started_at, status, trigger, delivery_state) VALUES (1, 5, 'ok', 'manual', 'pending')",
      ).run();
      expect(() =>
        db
          .prepare(
            "INSERT INTO cron_runs (job_id, started_at, status, trigger) VALUES (1, 6, 'missed', 'schedule')",
          )
          .run(),
      ).toThrow(/CHECK/);
      expect(
        migrate(
          db,
          migrations.filter((migration) => migration.version <= 17),
        ),
      ).toEqual([17]);
      expect(db.prepare("SELECT job_id, status, delivery_state FROM cron_runs").all()).toEqual([
        { job_id: 1, status: "ok", delivery_state: "pending" },
      ]);
      db.prepare(
        "INSERT INTO cron_runs (job_id, started_at, status, trigger) VALUES (1, 6, 'missed', 'schedule')",
      ).run();
      const indexes = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'cron_runs'")
        .pluck()
        .all();
      expect(indexes).toEqual(expect.arrayContaining(["cron_runs_job", "cron_runs_delivery"]));
      // Removing a job still removes its runs (the foreign key came along).
      db.prepare("DELETE FROM cron_jobs WHERE id = 1").run();
      expect(db.prepare("SELECT COUNT(*) FROM cron_runs").pluck().get()).toBe(0);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
