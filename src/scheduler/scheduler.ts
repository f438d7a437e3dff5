import type { Logger } from "pino";
import type { Clock } from "../core/clock.js";
import { type EventPublisher, NO_EVENTS } from "../core/events.js";
import type { AuthorityPort } from "../core/identity.js";
import type { ReplyTarget } from "../core/types.js";
import { errorMessage } from "../lib/errors.js";
import { type SyncCounts, syncConfigJobs } from "./config-sync.js";
import type { RunDelivery } from "./delivery.js";
import {
  cronOutcomeOf,
  type Job,
  type JobCreator,
  type JobRun,
  type JobSpec,
  type RunTrigger,
} from "./job.js";
import { assertMayCreate } from "./job-authority.js";
import type { JobExecutor } from "./job-executor.js";
import { nextRunOf, planJob } from "./job-plan.js";
import type { JobStore } from "./job-store.js";
import { type JobView, specOfJob, toJobView } from "./job-view.js";
import type { RunOutcome } from "./report.js";
import { SchedulerError } from "./scheduler-error.js";

export interface SchedulerSettings {
  timezone: string;
  catchUp: boolean;
  maxRunHistory: number;
  runTimeoutMs: number;
  /** Longest sleep between checks of the database (jobs added by the CLI, pending deliveries). */
  pollMs?: number;
}

export interface SchedulerDeps {
  jobs: JobStore;
  executor: JobExecutor;
  delivery: RunDelivery;
  clock: Clock;
  logger: Logger;
  settings: SchedulerSettings;
  /** Who may do what: delivery targets are checked against it at creation (and by `RunDelivery` at delivery). */
  authority: () => AuthorityPort;
  /** Where each due slot's outcome is published (`magpieEvents.cronRun`). */
  events?: EventPublisher;
}

export type { JobView };

/** Who is making or changing a job, and from where. */
export interface JobOrigin {
  /** The chat the request came from: the default report target and where approvals go. */
  createdFrom?: ReplyTarget;
  source?: Job["source"];
  /** Session key of the requesting turn. */
  createdBy?: string;
  /** Whose authority the job carries; default: the owner's (config, CLI, internal callers). */
  creator?: JobCreator;
}

export type JobPatch = Partial<
  Pick<
    JobSpec,
    "name" | "expression" | "delay" | "at" | "command" | "prompt" | "message" | "timezone" | "deliver"
  >
> & { enabled?: boolean };

const OUTPUT_EXCERPT_CHARS = 2000;
/** A due time this far behind "now" at startup counts as missed during downtime. */
const MISSED_GRACE_MS = 1000;
/** Missed slots counted one by one up to this many (a per-second job down for a week is "1000 or more"). */
const MISSED_COUNT_CAP = 1000;

/**
 * Fires jobs from the database: `next_run_at` is the single source of truth, one timer wakes at the
 * earliest one (and at least every `pollMs`), every run is recorded, runs of one job never overlap.
 */
export class Scheduler {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private started = false;
  private readonly running = new Map<number, Promise<JobRun>>();
  private readonly controllers = new Set<AbortController>();
  private readonly pollMs: number;
  private readonly events: EventPublisher;

  constructor(private readonly deps: SchedulerDeps) {
    this.pollMs = deps.settings.pollMs ?? 15_000;
    this.events = deps.events ?? NO_EVENTS;
  }

  /**
   * Recovers interrupted runs, then deals with slots that passed while Magpie was down: with `catchUp` a job runs
   * once for them (the first one) and the rest are recorded as one `missed` run (told in the catch-up report);
   * without it they are all one `missed` run, reported as `deliver.mode` says. Then starts firing.
   */
  start(): void {
    if (this.started) return;
    this.started = true;
    const { jobs, clock, settings } = this.deps;
    const now = clock.now();
    for (const run of jobs.interruptedRuns()) {
      jobs.finishRun(
        run.id,
        "error",
        `${run.output ?? ""}interrupted: Magpie stopped while this run was going`,
        now,
      );
    }
    for (const job of jobs.list()) {
      if (!job.enabled || job.nextRunAt === null || job.nextRunAt >= now - MISSED_GRACE_MS) continue;
      const missedAt = job.nextRunAt;
      const slots = this.slotsUpTo(job, missedAt, now);
      this.advance(job, now);
      if (settings.catchUp) {
        if (slots.count > 1) {
          const rest = `${slots.count - 1}${slots.capped ? " or more" : ""}`;
          this.recordMissed(job, "catch_up", slots.second, now, {
            reason: `${rest} more slot(s) passed while Magpie was down; they were caught up by one run`,
            notify: false,
          });
        }
        void this.launch(job, "catch_up", missedAt);
      } else {
        const count = `${slots.count}${slots.capped ? " or more" : ""}`;
        this.recordMissed(job, "catch_up", missedAt, now, {
          reason: `missed while Magpie was down (cron.catchUp is off): ${count} slot(s) from ${new Date(missedAt).toISOString()} did not run`,
          notify: true,
        });
        if (job.schedule.kind === "once") jobs.markCompleted(job.id, now);
      }
    }
    void this.tick();
  }

  /** Stops firing, stops runs in progress (recorded as interrupted) and waits until they are recorded. */
  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const controller of this.controllers) controller.abort(new Error("Magpie is shutting down"));
    await Promise.allSettled([...this.running.values()]);
  }

  /** Runs every due job; re-arms the timer whatever happens. Exposed so tests can prompt a check. */
  async tick(): Promise<void> {
    if (!this.started) return;
    clearTimeout(this.timer);
    const { jobs, clock, logger } = this.deps;
    try {
      const now = clock.now();
      for (const job of jobs.due(now)) {
        // One broken job must not stop the others (or the timer).
        try {
          if (job.runRequestedAt !== null) {
            jobs.clearRunRequest(job.id);
            void this.launch(job, "manual", null);
          }
          if (job.enabled && job.nextRunAt !== null && job.nextRunAt <= now) {
            const slot = job.nextRunAt;
            // A tick held up (a suspended box, a blocked loop) finds more than one slot passed: one run for them.
            const slots = this.slotsUpTo(job, slot, now);
            this.advance(job, now);
            if (slots.count > 1) {
              this.recordMissed(job, "schedule", slots.second, now, {
                reason: `${slots.count - 1}${slots.capped ? " or more" : ""} slot(s) passed while the scheduler was held up; one run covers them`,
                notify: false,
              });
            }
            void this.launch(job, "schedule", slot);
          }
        } catch (error) {
          logger.error({ job: job.id, err: error }, "cron-job-broken");
          jobs.setEnabled(job.id, false, null, now);
          jobs.recordSkipped(job.id, "schedule", job.nextRunAt, now, `job paused: ${errorMessage(error)}`);
        }
      }
      await this.deps.delivery.settle();
    } catch (error) {
      logger.error({ err: error }, "cron-tick-failed");
    } finally {
      this.arm();
    }
  }

  private arm(): void {
    if (!this.started || !this.deps.jobs.isOpen()) return;
    clearTimeout(this.timer);
    const now = this.deps.clock.now();
    const nextDue = this.deps.jobs.nextDueAt();
    // Pending chat reports are checked every 2 s so a final failure raises its alert promptly.
    const poll = this.deps.delivery.pendingCount() > 0 ? Math.min(2000, this.pollMs) : this.pollMs;
    const wait = nextDue === null ? poll : Math.max(0, Math.min(nextDue - now, poll));
    this.timer = setTimeout(() => void this.tick(), wait);
    this.timer.unref?.();
  }

  /** Moves a job's next run past `now` (from its slot, so a late tick never fires twice). */
  private advance(job: Job, now: number): void {
    const next = job.schedule.kind === "cron" ? nextRunOf(job, Math.max(now, job.nextRunAt ?? now)) : null;
    this.deps.jobs.setNextRun(job.id, next, now);
  }

  /** The job's slots from `first` up to `now` (counted up to a cap), and the second of them. */
  private slotsUpTo(
    job: Job,
    first: number,
    now: number,
  ): { count: number; second: number | null; capped: boolean } {
    let count = 1;
    let second: number | null = null;
    let at: number | null = first;
    while (count < MISSED_COUNT_CAP) {
      at = nextRunOf(job, at);
      if (at === null || at > now) return { count, second, capped: false };
      second ??= at;
      count += 1;
    }
    return { count, second, capped: true };
  }

  /** Records slots no run was made for; `notify` reports them as the job's `deliver.mode` says. */
  private recordMissed(
    job: Job,
    trigger: RunTrigger,
    scheduledAt: number | null,
    now: number,
    options: { reason: string; notify: boolean },
  ): void {
    const { jobs, delivery, logger, settings } = this.deps;
    const runId = jobs.recordSkipped(job.id, trigger, scheduledAt, now, options.reason, "missed");
    this.publishRun(job, "missed", scheduledAt, now, 0);
    logger.warn({ job: job.id, run: runId, reason: options.reason }, "cron-run-missed");
    if (!options.notify) {
      jobs.setDelivery(runId, { skipped: "told in the report of the run that covered it" }, "none");
    } else {
      const outcome: RunOutcome = {
        status: "missed",
        output: options.reason,
        trigger,
        scheduledAt,
        durationMs: 0,
      };
      void delivery.deliver(job, runId, outcome).catch((error: unknown) => {
        logger.error({ job: job.id, run: runId, err: error }, "cron-delivery-error");
        jobs.setDelivery(runId, { skipped: `delivery error: ${errorMessage(error)}` }, "failed");
      });
    }
    jobs.prune(job.id, settings.maxRunHistory);
  }

  /** Publishes a slot's outcome; the lag is how late the run started after its due time (0 for a manual run). */
  private publishRun(
    job: Job,
    status: "ran" | "failed" | "missed" | "skipped",
    scheduledAt: number | null,
    startedAt: number,
    durationMs: number,
  ): void {
    this.events.cronRun({
      jobId: String(job.id),
      name: job.name,
      status,
      lagSeconds: scheduledAt === null ? 0 : Math.max(0, startedAt - scheduledAt) / 1000,
      durationMs,
    });
  }

  /** Starts a run unless one of the same job is still going (then records a skipped run). */
  private launch(job: Job, trigger: RunTrigger, scheduledAt: number | null): Promise<JobRun> {
    const { jobs, clock, settings } = this.deps;
    const now = clock.now();
    if (this.running.has(job.id)) {
      const runId = jobs.recordSkipped(
        job.id,
        trigger,
        scheduledAt,
        now,
        "skipped: the previous run was still going",
      );
      jobs.prune(job.id, settings.maxRunHistory);
      this.publishRun(job, "skipped", scheduledAt, now, 0);
      this.deps.logger.warn({ job: job.id }, "cron-run-skipped-overlap");
      return Promise.resolve(jobs.getRun(runId)!);
    }
    const runId = jobs.startRun(job.id, trigger, scheduledAt, now);
    const run = this.execute(job, runId, trigger, scheduledAt).finally(() => {
      this.running.delete(job.id);
      this.arm();
    });
    this.running.set(job.id, run);
    return run;
  }

  private async execute(
    job: Job,
    runId: number,
    trigger: RunTrigger,
    scheduledAt: number | null,
  ): Promise<JobRun> {
    const { jobs, clock, settings, logger, executor, delivery } = this.deps;
    const started = clock.now();
    const controller = new AbortController();
    this.controllers.add(controller);
    let timedOut = false;
    const timeout = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, settings.runTimeoutMs);
    let outcome: RunOutcome;
    try {
      const result = await Promise.race([
        executor.execute(job, runId, controller.signal),
        new Promise<never>((_, reject) =>
          controller.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true }),
        ),
      ]);
      outcome = {
        status: result.ok ? "ok" : "error",
        output: result.output,
        trigger,
        scheduledAt,
        durationMs: clock.now() - started,
      };
    } catch (error) {
      outcome = {
        status: timedOut ? "timeout" : "error",
        output: timedOut
          ? `Job timed out after ${Math.round(settings.runTimeoutMs / 1000)} s (cron.runTimeoutSecs) and was stopped.`
          : controller.signal.aborted
            ? "interrupted: Magpie stopped while this run was going"
            : `Job failed: ${errorMessage(error)}`,
        trigger,
        scheduledAt,
        durationMs: clock.now() - started,
      };
    } finally {
      clearTimeout(timeout);
      this.controllers.delete(controller);
    }
    const finished = clock.now();
    jobs.finishRun(runId, outcome.status, outcome.output.slice(0, OUTPUT_EXCERPT_CHARS), finished);
    // A one-shot is done after its run — unless a reload gave it a new time while it ran (its next run is set again).
    if (
      job.schedule.kind === "once" &&
      trigger !== "manual" &&
      (jobs.get(job.id)?.nextRunAt ?? null) === null
    )
      jobs.markCompleted(job.id, finished);
    logger.info({ job: job.id, run: runId, status: outcome.status, trigger }, "cron-run-finished");
    this.publishRun(
      job,
      cronOutcomeOf(outcome.status) as "ran" | "failed",
      scheduledAt,
      started,
      outcome.durationMs,
    );
    try {
      await delivery.deliver(jobs.get(job.id) ?? job, runId, outcome);
    } catch (error) {
      logger.error({ job: job.id, run: runId, err: error }, "cron-delivery-error");
      jobs.setDelivery(runId, { skipped: `delivery error: ${errorMessage(error)}` }, "failed");
    }
    jobs.prune(job.id, settings.maxRunHistory);
    return jobs.getRun(runId)!;
  }

  // ── API for tools, /cron, the CLI and config sync ──────────────────────────────────────────────

  /** Adds a job; refused when its creator may not make it (guest, no shell, a report target not allowed). */
  add(spec: JobSpec, origin: JobOrigin = {}): JobView {
    const planned = planJob(spec, {
      defaultTimezone: this.deps.settings.timezone,
      now: this.deps.clock.now(),
      createdFrom: origin.createdFrom,
      source: origin.source ?? "chat",
      createdBy: origin.createdBy,
      creator: origin.creator,
    });
    assertMayCreate(planned, this.deps.authority(), origin.createdFrom ?? null);
    const job = this.deps.jobs.insert(planned);
    this.arm();
    return toJobView(job);
  }

  list(): JobView[] {
    return this.deps.jobs.list().map((job) => toJobView(job));
  }

  get(id: number): JobView {
    return toJobView(this.require(id));
  }

  remove(id: number): JobView {
    const job = this.require(id);
    this.deps.jobs.remove(id);
    this.arm();
    return toJobView(job);
  }

  /** Pauses (false) or resumes (true); resuming computes the next run from now. */
  setEnabled(id: number, enabled: boolean, actor?: JobOrigin): JobView {
    return this.update(id, { enabled }, actor);
  }

  /**
   * Changes a job. `actor` (a turn or /cron) must be allowed to make the result: a new command needs shell in
   * the actor's tools, a new report target passes the delivery rule from the actor's chat. A new payload makes
   * the actor the job's creator (its runs carry the actor's authority, its approvals go to the actor's chat).
   */
  update(id: number, patch: JobPatch, actor?: JobOrigin): JobView {
    const job = this.require(id);
    const now = this.deps.clock.now();
    const scheduleChanged =
      patch.expression !== undefined || patch.delay !== undefined || patch.at !== undefined;
    const payloadChanged =
      patch.command !== undefined || patch.prompt !== undefined || patch.message !== undefined;
    const current = specOfJob(job);
    const defined = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined));
    const keepsOneShotTime = job.schedule.kind === "once" && !scheduleChanged;
    const spec: JobSpec = {
      ...current,
      ...(scheduleChanged ? { expression: undefined } : {}),
      ...(payloadChanged ? { command: undefined, prompt: undefined, message: undefined } : {}),
      ...defined,
      // A one-shot keeps its time unless a new one is given; the placeholder only satisfies validation.
      ...(keepsOneShotTime ? { delay: "1s" } : {}),
      deliver: { ...current.deliver, ...patch.deliver },
    };
    const takesOver = payloadChanged ? actor?.creator : undefined;
    const planned = planJob(spec, {
      defaultTimezone: this.deps.settings.timezone,
      now,
      source: job.source,
      createdBy: job.createdBy,
      creator: takesOver ?? job.creator,
      createdFrom: takesOver ? actor?.createdFrom : job.createdFrom,
    });
    if (actor?.creator) {
      assertMayCreate(
        {
          kind: planned.kind,
          // Only a changed target is judged from the actor's chat; an unchanged one was judged when it was set.
          deliver: patch.deliver ? planned.deliver : { ...planned.deliver, chat: undefined },
          creator: { ...actor.creator, toolNames: payloadChanged ? actor.creator.toolNames : undefined },
        },
        this.deps.authority(),
        actor.createdFrom ?? null,
      );
    } else if (patch.deliver) {
      assertMayCreate({ ...planned, creator: job.creator }, this.deps.authority(), null);
    }
    let nextRunAt = planned.nextRunAt;
    if (keepsOneShotTime) {
      if (planned.enabled && job.completedAt !== null) {
        throw new SchedulerError(
          "cron.job_done",
          `Job #${id} was a one-shot that already ran; add a new job instead.`,
        );
      }
      nextRunAt = planned.enabled ? (job.nextRunAt ?? now) : null;
    }
    const deliver = patch.deliver
      ? { ...planned.deliver, ...this.threadOf(job, planned.deliver) }
      : job.deliver;
    const updated = this.deps.jobs.replace(id, { ...planned, deliver, nextRunAt }, now);
    this.arm();
    return toJobView(updated);
  }

  /** Keeps the thread of the original chat when a delivery change still points at that chat. */
  private threadOf(job: Job, deliver: Job["deliver"]): Partial<Job["deliver"]> {
    const before = job.deliver.chat;
    const after = deliver.chat;
    if (!before?.threadId || !after || before.channel !== after.channel || before.chatId !== after.chatId)
      return {};
    return { chat: { ...after, threadId: before.threadId } };
  }

  /** Runs a job now, whatever its schedule (a run still going makes this one skipped). */
  runNow(id: number): Promise<JobRun> {
    const job = this.require(id);
    if (!this.started) {
      throw new SchedulerError("cron.not_running", "The scheduler is not running; start Magpie first.");
    }
    return this.launch(job, "manual", null);
  }

  runs(id: number, limit = 10): JobRun[] {
    this.require(id);
    return this.deps.jobs.runs(id, limit);
  }

  /** Finds a job by id or, failing that, by exact name. */
  resolve(idOrName: string | number): number {
    const asNumber =
      typeof idOrName === "number"
        ? idOrName
        : /^#?\d+$/.test(idOrName.trim())
          ? Number(idOrName.trim().replace("#", ""))
          : NaN;
    if (!Number.isNaN(asNumber) && this.deps.jobs.get(asNumber)) return asNumber;
    const byName = this.deps.jobs.list().filter((job) => job.name === String(idOrName).trim());
    if (byName.length === 1) return byName[0]!.id;
    throw new SchedulerError(
      "cron.job_not_found",
      `No job "${idOrName}"${byName.length > 1 ? " (several jobs have that name; use the id)" : ""} — see cron_list for ids.`,
    );
  }

  /**
   * Takes over new `cron.*` and `timezone` settings (a config reload): the run timeout and history cap apply from
   * the next run, the time zone to jobs made from now on (config jobs get it through `syncFromConfig`), `catchUp`
   * at the next start.
   */
  updateSettings(settings: Omit<SchedulerSettings, "pollMs">): void {
    Object.assign(this.deps.settings, settings);
    this.arm();
  }

  /** Makes the database match the config's jobs (by name); see `syncConfigJobs`. */
  syncFromConfig(specs: Array<JobSpec & { name: string }>): SyncCounts {
    const { jobs, clock, settings, logger } = this.deps;
    const counts = syncConfigJobs(jobs, specs, {
      timezone: settings.timezone,
      now: clock.now(),
      logger,
      authority: this.deps.authority(),
    });
    this.arm();
    return counts;
  }

  private require(id: number): Job {
    const job = this.deps.jobs.get(id);
    if (!job) throw new SchedulerError("cron.job_not_found", `No job #${id} — see cron_list for ids.`);
    return job;
  }
}
