import { cronOutcomeOf, type JobRun } from "./job.js";
import { formatDuration } from "./report.js";
import type { JobView } from "./scheduler.js";

/** Plain-text job list for /cron and `magpie cron list`. */
export function formatJobList(jobs: JobView[]): string {
  if (jobs.length === 0) return "No scheduled jobs. Add one with /cron add <expression> <command>.";
  return jobs
    .map((job) => {
      const what = job.command ?? job.prompt ?? job.message ?? "";
      const next = job.next_run ? `next ${job.next_run}` : job.status;
      const where = job.deliver.channel ? ` → ${job.deliver.channel}:${job.deliver.chat_id}` : "";
      return `#${job.id} ${job.name} [${job.status}] ${job.schedule} (${job.timezone}) — ${job.kind}: ${what.slice(0, 60)} — ${next}${where}${job.deliver.pushover ? " + pushover" : ""}`;
    })
    .join("\n");
}

/** Plain-text run history, newest first. */
export function formatRuns(jobId: number, runs: JobRun[]): string {
  if (runs.length === 0) return `Job #${jobId} has not run yet.`;
  return runs
    .map((run) => {
      const when = new Date(run.startedAt).toISOString();
      const took = run.durationMs === null ? "" : ` in ${formatDuration(run.durationMs)}`;
      const tag =
        run.trigger === "schedule" ? "" : ` (${run.trigger === "catch_up" ? "caught up" : "manual"})`;
      const excerpt = (run.output ?? "").split("\n")[0]?.slice(0, 80) ?? "";
      // The outcome (ran, failed, missed, skipped); a timeout says so.
      const status =
        run.status === "running"
          ? "running"
          : `${cronOutcomeOf(run.status)}${run.status === "timeout" ? " (timeout)" : ""}`;
      return `run ${run.id} ${when} ${status}${took}${tag} — delivery ${run.deliveryState}${excerpt ? ` — ${excerpt}` : ""}`;
    })
    .join("\n");
}
