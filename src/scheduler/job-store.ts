import { z } from "zod";
import { parseJson } from "../lib/parse-json.js";
import { row } from "../lib/row.js";
import type { Db } from "../store/index.js";
import { prepared } from "../store/prepared.js";
import type { Delivery, DeliveryResult, Job, JobRun, RunStatus, RunTrigger } from "./job.js";

const replyTargetSchema = z.object({
  channel: z.string(),
  chatId: z.string(),
  threadId: z.string().optional(),
  replyToMessageId: z.string().optional(),
});

/** A job's delivery as stored; `pushover` absent (rows written by hand or by an early release) is off. */
const deliverySchema: z.ZodType<Delivery, unknown> = z.object({
  chat: replyTargetSchema.optional(),
  pushover: z.boolean().default(false),
  ntfy: z.boolean().optional(),
  mode: z.enum(["always", "on_error", "on_success", "none"]),
});

const channelResult = z.object({
  status: z.enum(["sent", "failed", "not_configured"]),
  error: z.string().optional(),
});
const deliveryResultSchema: z.ZodType<DeliveryResult> = z.object({
  chat: z
    .object({
      outboxId: z.number(),
      status: z.enum(["queued", "sent", "failed"]),
      error: z.string().optional(),
    })
    .optional(),
  pushover: channelResult.optional(),
  ntfy: channelResult.optional(),
  alert: channelResult.optional(),
  failedOver: z.string().optional(),
  skipped: z.string().optional(),
  refused: z.string().optional(),
});

const toolSetSchema = z.union([z.string(), z.array(z.string())]);
const toolNamesSchema = z.array(z.string());

const jobRows = row(
  z.object({
    id: z.number(),
    name: z.string(),
    schedule_kind: z.enum(["cron", "once"]),
    expression: z.string().nullable(),
    timezone: z.string(),
    kind: z.enum(["shell", "agent", "message"]),
    payload: z.string(),
    agent: z.string().nullable(),
    tool_set: z.string().nullable(),
    allow_after_untrusted: z.string().nullable(),
    deliver: z.string(),
    enabled: z.number(),
    source: z.enum(["chat", "config", "cli"]),
    created_by: z.string().nullable(),
    creator_channel: z.string(),
    creator_user_id: z.string(),
    creator_user_name: z.string().nullable(),
    creator_role: z.enum(["owner", "guest"]),
    creator_agent: z.string().nullable(),
    creator_tools: z.string().nullable(),
    created_from: z.string().nullable(),
    next_run_at: z.number().nullable(),
    last_run_at: z.number().nullable(),
    run_requested_at: z.number().nullable(),
    completed_at: z.number().nullable(),
    created_at: z.number(),
  }),
  "cron_jobs",
);
type JobRow = NonNullable<ReturnType<typeof jobRows.one>>;

const runRows = row(
  z.object({
    id: z.number(),
    job_id: z.number(),
    scheduled_at: z.number().nullable(),
    started_at: z.number(),
    finished_at: z.number().nullable(),
    duration_ms: z.number().nullable(),
    status: z.enum(["running", "ok", "error", "timeout", "skipped", "missed"]),
    trigger: z.enum(["schedule", "manual", "catch_up"]),
    output: z.string().nullable(),
    delivery: z.string().nullable(),
    delivery_state: z.enum(["none", "pending", "delivered", "failed"]),
  }),
  "cron_runs",
);
type RunRow = NonNullable<ReturnType<typeof runRows.one>>;

const earliestRun = row(z.object({ at: z.number().nullable() }), "cron_jobs next run");

const toJob = (row: JobRow): Job => ({
  id: row.id,
  name: row.name,
  schedule:
    row.schedule_kind === "cron" ? { kind: "cron", expression: row.expression ?? "" } : { kind: "once" },
  timezone: row.timezone,
  kind: row.kind,
  payload: row.payload,
  agent: row.agent ?? undefined,
  toolSet: row.tool_set ? parseJson(row.tool_set, toolSetSchema, "cron_jobs.tool_set") : undefined,
  ...(row.allow_after_untrusted
    ? {
        allowAfterUntrusted: parseJson(
          row.allow_after_untrusted,
          toolNamesSchema,
          "cron_jobs.allow_after_untrusted",
        ),
      }
    : {}),
  deliver: parseJson(row.deliver, deliverySchema, "cron_jobs.deliver"),
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
    ...(row.creator_tools
      ? { toolNames: parseJson(row.creator_tools, toolNamesSchema, "cron_jobs.creator_tools") }
      : {}),
  },
  createdFrom: row.created_from
    ? parseJson(row.created_from, replyTargetSchema, "cron_jobs.created_from")
    : undefined,
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
  delivery: row.delivery ? parseJson(row.delivery, deliveryResultSchema, "cron_runs.delivery") : null,
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
    const result = prepared(
      this.db,
      `INSERT INTO cron_jobs (name, schedule_kind, expression, timezone, kind, payload, agent, tool_set, deliver,
                                enabled, next_run_at, creator_channel, creator_user_id, creator_user_name,
                                creator_role, creator_agent, creator_tools, created_from, source, created_by,
                                allow_after_untrusted, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      ...this.columns(job),
      job.source,
      job.createdBy ?? null,
      job.allowAfterUntrusted ? JSON.stringify(job.allowAfterUntrusted) : null,
      job.createdAt,
      job.createdAt,
    );
    return this.get(Number(result.lastInsertRowid))!;
  }

  /**
   * Replaces a job's definition (config sync, cron_update); keeps its id and run history. The creator is the
   * one given: whoever last changed what the job does answers for it.
   */
  replace(id: number, job: Omit<NewJob, "source" | "createdBy" | "createdAt">, at: number): Job {
    prepared(
      this.db,
      `UPDATE cron_jobs SET name = ?, schedule_kind = ?, expression = ?, timezone = ?, kind = ?, payload = ?,
           agent = ?, tool_set = ?, deliver = ?, enabled = ?, next_run_at = ?, creator_channel = ?,
           creator_user_id = ?, creator_user_name = ?, creator_role = ?, creator_agent = ?, creator_tools = ?,
           created_from = ?, allow_after_untrusted = ?, completed_at = NULL, updated_at = ?
         WHERE id = ?`,
    ).run(
      ...this.columns(job),
      job.allowAfterUntrusted ? JSON.stringify(job.allowAfterUntrusted) : null,
      at,
      id,
    );
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
    const found = jobRows.one(prepared(this.db, "SELECT * FROM cron_jobs WHERE id = ?").get(id));
    return found ? toJob(found) : undefined;
  }

  list(): Job[] {
    return jobRows.all(prepared(this.db, "SELECT * FROM cron_jobs ORDER BY id").all()).map(toJob);
  }

  byConfigName(name: string): Job | undefined {
    const found = jobRows.one(
      prepared(this.db, "SELECT * FROM cron_jobs WHERE source = 'config' AND name = ?").get(name),
    );
    return found ? toJob(found) : undefined;
  }

  /** Enabled jobs whose next run is due, or that someone asked to run now (CLI). */
  due(now: number): Job[] {
    const rows = jobRows.all(
      prepared(
        this.db,
        `SELECT * FROM cron_jobs
         WHERE (enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ?) OR run_requested_at IS NOT NULL
         ORDER BY next_run_at, id`,
      ).all(now),
    );
    return rows.map(toJob);
  }

  /** The earliest moment something is due, or null. */
  nextDueAt(): number | null {
    const found = earliestRun.one(
      prepared(
        this.db,
        `SELECT MIN(at) AS at FROM (
           SELECT MIN(next_run_at) AS at FROM cron_jobs WHERE enabled = 1
           UNION ALL SELECT MIN(run_requested_at) FROM cron_jobs)`,
      ).get(),
    );
    return found?.at ?? null;
  }

  setNextRun(id: number, nextRunAt: number | null, at: number): void {
    prepared(this.db, "UPDATE cron_jobs SET next_run_at = ?, updated_at = ? WHERE id = ?").run(
      nextRunAt,
      at,
      id,
    );
  }

  setEnabled(id: number, enabled: boolean, nextRunAt: number | null, at: number): void {
    prepared(this.db, "UPDATE cron_jobs SET enabled = ?, next_run_at = ?, updated_at = ? WHERE id = ?").run(
      enabled ? 1 : 0,
      nextRunAt,
      at,
      id,
    );
  }

  markCompleted(id: number, at: number): void {
    prepared(
      this.db,
      "UPDATE cron_jobs SET enabled = 0, next_run_at = NULL, completed_at = ?, updated_at = ? WHERE id = ?",
    ).run(at, at, id);
  }

  requestRun(id: number, at: number): void {
    prepared(this.db, "UPDATE cron_jobs SET run_requested_at = ?, updated_at = ? WHERE id = ?").run(
      at,
      at,
      id,
    );
  }

  clearRunRequest(id: number): void {
    prepared(this.db, "UPDATE cron_jobs SET run_requested_at = NULL WHERE id = ?").run(id);
  }

  remove(id: number): boolean {
    return prepared(this.db, "DELETE FROM cron_jobs WHERE id = ?").run(id).changes > 0;
  }

  startRun(jobId: number, trigger: RunTrigger, scheduledAt: number | null, startedAt: number): number {
    prepared(this.db, "UPDATE cron_jobs SET last_run_at = ? WHERE id = ?").run(startedAt, jobId);
    const result = prepared(
      this.db,
      "INSERT INTO cron_runs (job_id, scheduled_at, started_at, status, trigger) VALUES (?, ?, ?, 'running', ?)",
    ).run(jobId, scheduledAt, startedAt, trigger);
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
    const result = prepared(
      this.db,
      `INSERT INTO cron_runs (job_id, scheduled_at, started_at, finished_at, duration_ms, status, trigger, output)
         VALUES (?, ?, ?, ?, 0, ?, ?, ?)`,
    ).run(jobId, scheduledAt, at, at, status, trigger, reason);
    return Number(result.lastInsertRowid);
  }

  finishRun(runId: number, status: RunStatus, output: string, finishedAt: number): void {
    prepared(
      this.db,
      "UPDATE cron_runs SET status = ?, output = ?, finished_at = ?, duration_ms = ? - started_at WHERE id = ?",
    ).run(status, output, finishedAt, finishedAt, runId);
  }

  setDelivery(runId: number, delivery: DeliveryResult, state: JobRun["deliveryState"]): void {
    prepared(this.db, "UPDATE cron_runs SET delivery = ?, delivery_state = ? WHERE id = ?").run(
      JSON.stringify(delivery),
      state,
      runId,
    );
  }

  getRun(runId: number): JobRun | undefined {
    const found = runRows.one(prepared(this.db, "SELECT * FROM cron_runs WHERE id = ?").get(runId));
    return found ? toRun(found) : undefined;
  }

  /** Newest first. */
  runs(jobId: number, limit: number): JobRun[] {
    return runRows
      .all(
        prepared(this.db, "SELECT * FROM cron_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?").all(
          jobId,
          limit,
        ),
      )
      .map(toRun);
  }

  runsAwaitingDelivery(): JobRun[] {
    return runRows
      .all(prepared(this.db, "SELECT * FROM cron_runs WHERE delivery_state = 'pending' ORDER BY id").all())
      .map(toRun);
  }

  /** Runs left 'running' by a crash: nothing is executing them any more. */
  interruptedRuns(): JobRun[] {
    return runRows
      .all(prepared(this.db, "SELECT * FROM cron_runs WHERE status = 'running'").all())
      .map(toRun);
  }

  /** Keeps the newest `keep` runs of a job. */
  prune(jobId: number, keep: number): void {
    prepared(
      this.db,
      `DELETE FROM cron_runs WHERE job_id = ? AND id NOT IN (
           SELECT id FROM cron_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?)`,
    ).run(jobId, jobId, keep);
  }
}
