import { z } from "zod";
import { row } from "../../lib/row.js";
import { type CronOutcome, cronOutcomeOf, type RunStatus } from "../../scheduler/job.js";
import type { Db } from "../../store/index.js";
import { type ChartDay, dayIndexOf } from "./days.js";

const runRows = row(
  z.object({
    job_id: z.number(),
    status: z.enum(["running", "ok", "error", "timeout", "skipped", "missed"]),
    at: z.number(),
  }),
  "cron_runs",
);

/** One job's day: how many of its slots ran, failed, were missed or skipped. */
export type DayOutcomes = Record<CronOutcome, number>;

/** What a day of a job shows: its worst outcome, or `none` when nothing was due or recorded. */
export type DayState = CronOutcome | "none";

const WORST_FIRST: CronOutcome[] = ["failed", "missed", "skipped", "ran"];

export function dayStateOf(outcomes: DayOutcomes): DayState {
  return WORST_FIRST.find((outcome) => outcomes[outcome] > 0) ?? "none";
}

interface RunRow {
  job_id: number;
  status: RunStatus;
  at: number;
}

/**
 * Each job's runs (table `cron_runs`, `missed` since migration 017) per local day, counted by outcome. A run counts
 * on the day of its slot (a missed or caught-up run included), else of its start. Only the runs the scheduler
 * keeps (`maxRunHistory` per job) are there to count.
 */
export function cronRunsByDay(db: Db, days: readonly ChartDay[]): Map<number, DayOutcomes[]> {
  const byJob = new Map<number, DayOutcomes[]>();
  if (days.length === 0) return byJob;
  const rows = runRows.all(
    db
      .prepare(
        `SELECT job_id, status, COALESCE(scheduled_at, started_at) AS at FROM cron_runs
       WHERE COALESCE(scheduled_at, started_at) >= ? AND COALESCE(scheduled_at, started_at) < ?`,
      )
      .all(days[0]!.start, days[days.length - 1]!.end),
  );
  for (const row of rows) {
    const index = dayIndexOf(days, row.at);
    if (index < 0) continue;
    let perDay = byJob.get(row.job_id);
    if (!perDay) {
      perDay = days.map(() => ({ ran: 0, failed: 0, missed: 0, skipped: 0 }));
      byJob.set(row.job_id, perDay);
    }
    perDay[index]![cronOutcomeOf(row.status)]++;
  }
  return byJob;
}
