import { z } from "zod";
import { cronOutcomeOf, type JobRun } from "../scheduler/job.js";
import { jobIdSchema, schedulerCall, schedulerOf } from "./cron-shared.js";
import { defineTool } from "./define-tool.js";

const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());

/** A run as tools show it. */
export function runView(run: JobRun) {
  return {
    run_id: run.id,
    job_id: run.jobId,
    status: run.status,
    // ran, failed, missed or skipped (DESIGN.md → Scheduler); running while it runs.
    outcome: run.status === "running" ? "running" : cronOutcomeOf(run.status),
    trigger: run.trigger,
    caught_up: run.trigger === "catch_up",
    scheduled_at: iso(run.scheduledAt),
    started_at: iso(run.startedAt),
    finished_at: iso(run.finishedAt),
    duration_ms: run.durationMs,
    output: run.output,
    delivery: run.delivery ? { state: run.deliveryState, ...run.delivery } : { state: run.deliveryState },
  };
}

export const cronRunsTool = defineTool({
  name: "cron_runs",
  description:
    "Show a job's recent runs (newest first): status, times, duration, output excerpt and delivery result.",
  inputSchema: z.object({
    job_id: jobIdSchema,
    limit: z.number().int().min(1).max(100).optional().describe("How many runs (default 10)."),
  }),
  risk: "low",
  readOnly: true,
  async execute(input, context) {
    const scheduler = schedulerOf(context);
    return schedulerCall(() => {
      const id = scheduler.resolve(input.job_id);
      return { job_id: id, runs: scheduler.runs(id, input.limit ?? 10).map(runView) };
    });
  },
});
