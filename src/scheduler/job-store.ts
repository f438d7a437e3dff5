import type { Db } from "../store/index.js";
import type { DeliveryResult, Job, JobRun, RunStatus, RunTrigger } from "./job.js";

interface JobRow {
  id: number;
  name: string;
  schedule_kind: "cron" | "once";
  expression: string | null;
  timezone: string;
  kind: Job["kind"];
  payload: string;
  agent: string | null;
  tool_set: string | null;
  deliver: string;
  enabled: number;
  source: Job["source"];
  created_by: string | null;
  creator_channel: string;
  creator_user_id: string;
  creator_user_name: string | null;
  creator_role: "owner" | "guest";
  creator_agent: string | null;
  creator_tools: string | null;
  created_from: string | null;
  next_run_at: number | null;
  last_run_at: number | null;
  run_requested_at: number | null;
  completed_at: number | null;
  created_at: number;
}

interface RunRow {
  id: number;
  job_id: number;
  scheduled_at: number | null;
  started_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  status: RunStatus;
  trigger: RunTrigger;
  output: string | null;
  delivery: string | null;
  delivery_state: JobRun["deliveryState"];
}

const toJob = (row: JobRow): Job => ({
  id: row.id,
  name: row.name,
  schedule:
    row.schedule_kind === "cron" ? { kind: "cron", expression: row.expression ?? "" } : { kind: "once" },
  timezone: row.timezone,
  kind: row.kind,
  payload: row.payload,
  agent: row.agent ?? undefined,
  toolSet: row.tool_set ? (JSON.parse(row.tool_set) as string | string[]) : undefined,
  deliver: JSON.parse(row.deliver) as Job["deliver"],
  enabled: row.enabled === 1,
  source: row.source,
  createdBy: row.created_by ?? undefined,
  creator: {
    identity: {
      channel: row.creator_channel,
      userId: row.creator_user_id,
      ...(row.creator_user_name ? { userName: row.creator_user_name } : {}),
      role: row.creator_role,
    },
    ...(row.creator_agent ? { agent: row.creator_agent } : {}),
    ...(row.creator_tools ? { toolNames: JSON.parse(row.creator_tools) as string[] } : {}),
  },
  createdFrom: row.created_from ? (JSON.parse(row.created_from) as Job["createdFrom"]) : undefined,
  nextRunAt: row.next_run_at,
  lastRunAt: row.last_run_at,
  runRequestedAt: row.run_requested_at,
  completedAt: row.completed_at,
  createdAt: row.created_at,
});

const toRun = (row: RunRow): JobRun => ({
  id: row.id,
  jobId: row.job_id,
  scheduledAt: row.scheduled_at,
  startedAt: row.started_at,
  finishedAt: row.finished_at,
  durationMs: row.duration_ms,
  status: row.status,
  trigger: row.trigger,
  output: row.output,
  delivery: row.delivery ? (JSON.parse(row.delivery) as DeliveryResult) : null,
  deliveryState: row.delivery_state,
});

export type NewJob = Omit<Job, "id" | "lastRunAt" | "runRequestedAt" | "completedAt">;

/** SQLite persistence for jobs and runs (tables from migration 004, creators from 006, `missed` from 017). */
export class JobStore {
  constructor(private readonly db: Db) {}

  /** False once the database is closed (shutdown): background work stops touching it. */
  isOpen(): boolean {
    return this.db.open;
  }

  insert(job: NewJob): Job {
    const result = this.db
      .prepare(
        `INSERT INTO cron_jobs (name, schedule_kind, expression, timezone, kind, payload, agent, tool_set, deliver,
                                enabled, next_run_at, creator_channel, creator_user_id, creator_user_name,
                                creator_role, creator_agent, creator_tools, created_from, source, created_by,
                                created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(...this.columns(job), job.source, job.createdBy ?? null, job.createdAt, job.createdAt);
    return this.get(Number(result.lastInsertRowid))!;
  }

  /**
   * Replaces a job's definition (config sync, cron_update); keeps its id and run history. The creator is the
   * one given: whoever last changed what the job does answers for it.
   */
  replace(id: number, job: Omit<NewJob, "source" | "createdBy" | "createdAt">, at: number): Job {
    this.db
      .prepare(
        `UPDATE cron_jobs SET name = ?, schedule_kind = ?, expression = ?, timezone = ?, kind = ?, payload = ?,
           agent = ?, tool_set = ?, deliver = ?, enabled = ?, next_run_at = ?, creator_channel = ?,
           creator_user_id = ?, creator_user_name = ?, creator_role = ?, creator_agent = ?, creator_tools = ?,
           created_from = ?, completed_at = NULL, updated_at = ?
         WHERE id = ?`,
      )
      .run(...this.columns(job), at, id);
    return this.get(id)!;
  }

  private columns(job: Omit<NewJob, "source" | "createdBy" | "createdAt">) {
    const { identity, agent, toolNames } = job.creator;
    return [
      job.name,
      job.schedule.kind,
      job.schedule.kind === "cron" ? job.schedule.expression : null,
      job.timezone,
      job.kind,
      job.payload,
      job.agent ?? null,
      job.toolSet === undefined ? null : JSON.stringify(job.toolSet),
      JSON.stringify(job.deliver),
      job.enabled ? 1 : 0,
      job.nextRunAt,
      identity.channel,
      identity.userId,
      identity.userName ?? null,
      identity.role,
      agent ?? null,
      toolNames ? JSON.stringify(toolNames) : null,
      job.createdFrom ? JSON.stringify(job.createdFrom) : null,
    ] as const;
  }

  get(id: number): Job | undefined {
    const row = this.db.prepare("SELECT * FROM cron_jobs WHERE id = ?").get(id) as JobRow | undefined;
    return row ? toJob(row) : undefined;
  }

  list(): Job[] {
    return (this.db.prepare("SELECT * FROM cron_jobs ORDER BY id").all() as JobRow[]).map(toJob);
  }

  byConfigName(name: string): Job | undefined {
    const row = this.db.prepare("SELECT * FROM cron_jobs WHERE source = 'config' AND name = ?").get(name) as
      | JobRow
      | undefined;
    return row ? toJob(row) : undefined;
  }

  /** Enabled jobs whose next run is due, or that someone asked to run now (CLI). */
  due(now: number): Job[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM cron_jobs
         WHERE (enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ?) OR run_requested_at IS NOT NULL
         ORDER BY next_run_at, id`,
      )
      .all(now) as JobRow[];
    return rows.map(toJob);
  }

  /** The earliest moment something is due, or null. */
  nextDueAt(): number | null {
    const row = this.db
      .prepare(
        `SELECT MIN(at) AS at FROM (
           SELECT MIN(next_run_at) AS at FROM cron_jobs WHERE enabled = 1
           UNION ALL SELECT MIN(run_requested_at) FROM cron_jobs)`,
      )
      .get() as { at: number | null };
    return row.at;
  }

  setNextRun(id: number, nextRunAt: number | null, at: number): void {
    this.db
      .prepare("UPDATE cron_jobs SET next_run_at = ?, updated_at = ? WHERE id = ?")
      .run(nextRunAt, at, id);
  }

  setEnabled(id: number, enabled: boolean, nextRunAt: number | null, at: number): void {
    this.db
      .prepare("UPDATE cron_jobs SET enabled = ?, next_run_at = ?, updated_at = ? WHERE id = ?")
      .run(enabled ? 1 : 0, nextRunAt, at, id);
  }

  markCompleted(id: number, at: number): void {
    this.db
      .prepare(
        "UPDATE cron_jobs SET enabled = 0, next_run_at = NULL, completed_at = ?, updated_at = ? WHERE id = ?",
      )
      .run(at, at, id);
  }

  requestRun(id: number, at: number): void {
    this.db.prepare("UPDATE cron_jobs SET run_requested_at = ?, updated_at = ? WHERE id = ?").run(at, at, id);
  }

  clearRunRequest(id: number): void {
    this.db.prepare("UPDATE cron_jobs SET run_requested_at = NULL WHERE id = ?").run(id);
  }

  remove(id: number): boolean {
    return this.db.prepare("DELETE FROM cron_jobs WHERE id = ?").run(id).changes > 0;
  }

  startRun(jobId: number, trigger: RunTrigger, scheduledAt: number | null, startedAt: number): number {
    this.db.prepare("UPDATE cron_jobs SET last_run_at = ? WHERE id = ?").run(startedAt, jobId);
    const result = this.db
      .prepare(
        "INSERT INTO cron_runs (job_id, scheduled_at, started_at, status, trigger) VALUES (?, ?, ?, 'running', ?)",
      )
      .run(jobId, scheduledAt, startedAt, trigger);
    return Number(result.lastInsertRowid);
  }

  /** Records a run that did not execute: `skipped` (overlap, a broken job paused) or `missed` (a slot passed). */
  recordSkipped(
    jobId: number,
    trigger: RunTrigger,
    scheduledAt: number | null,
    at: number,
    reason: string,
    status: "skipped" | "missed" = "skipped",
  ): number {
    const result = this.db
      .prepare(
        `INSERT INTO cron_runs (job_id, scheduled_at, started_at, finished_at, duration_ms, status, trigger, output)
         VALUES (?, ?, ?, ?, 0, ?, ?, ?)`,
      )
      .run(jobId, scheduledAt, at, at, status, trigger, reason);
    return Number(result.lastInsertRowid);
  }

  finishRun(runId: number, status: RunStatus, output: string, finishedAt: number): void {
    this.db
      .prepare(
        "UPDATE cron_runs SET status = ?, output = ?, finished_at = ?, duration_ms = ? - started_at WHERE id = ?",
      )
      .run(status, output, finishedAt, finishedAt, runId);
  }

  setDelivery(runId: number, delivery: DeliveryResult, state: JobRun["deliveryState"]): void {
    this.db
      .prepare("UPDATE cron_runs SET delivery = ?, delivery_state = ? WHERE id = ?")
      .run(JSON.stringify(delivery), state, runId);
  }

  getRun(runId: number): JobRun | undefined {
    const row = this.db.prepare("SELECT * FROM cron_runs WHERE id = ?").get(runId) as RunRow | undefined;
    return row ? toRun(row) : undefined;
  }

  /** Newest first. */
  runs(jobId: number, limit: number): JobRun[] {
    return (
      this.db
        .prepare("SELECT * FROM cron_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?")
        .all(jobId, limit) as RunRow[]
    ).map(toRun);
  }

  runsAwaitingDelivery(): JobRun[] {
    return (
      this.db
        .prepare("SELECT * FROM cron_runs WHERE delivery_state = 'pending' ORDER BY id")
        .all() as RunRow[]
    ).map(toRun);
  }

  /** Runs left 'running' by a crash: nothing is executing them any more. */
  interruptedRuns(): JobRun[] {
    return (this.db.prepare("SELECT * FROM cron_runs WHERE status = 'running'").all() as RunRow[]).map(toRun);
  }

  /** Keeps the newest `keep` runs of a job. */
  prune(jobId: number, keep: number): void {
    this.db
      .prepare(
        `DELETE FROM cron_runs WHERE job_id = ? AND id NOT IN (
           SELECT id FROM cron_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?)`,
      )
      .run(jobId, jobId, keep);
  }
}
