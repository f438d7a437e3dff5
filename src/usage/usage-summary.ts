import { z } from "zod";
import { row } from "../lib/row.js";
import type { Db } from "../store/index.js";
import { flushQueuedWrites } from "../store/queued-writes.js";

/** The sums every usage query selects (SQLite's SUM is NULL over no rows). */
const totals = z.object({
  calls: z.number().nullable(),
  prompt: z.number().nullable(),
  completion: z.number().nullable(),
  estimated: z.number().nullable(),
  cost: z.number().nullable(),
  unpriced: z.number().nullable(),
});
const totalsRows = row(totals, "llm_usage totals");
const byModelRows = row(totals.extend({ model: z.string(), kind: z.string() }), "llm_usage by model");
const byOriginRows = row(
  totals.extend({ origin_key: z.string(), job_id: z.number().nullable(), job_name: z.string().nullable() }),
  "llm_usage by origin",
);

/** Sums over a set of ledger rows. */
export interface UsageTotals {
  calls: number;
  promptTokens: number;
  completionTokens: number;
  tokens: number;
  /** USD of the priced calls; null when none of them had a price. */
  costUsd: number | null;
  /** Calls whose counts are estimates (the provider sent no `usage`). */
  estimatedCalls: number;
  /** Calls with no `llm.prices` entry for their model: not in `costUsd`. */
  unpricedCalls: number;
}

export interface ModelUsage extends UsageTotals {
  model: string;
  kind: string;
}

/** Who spent: a chat session, a scheduled job (all its runs), or memory's embeddings. */
export interface OriginUsage extends UsageTotals {
  /** `job:<id>`, `memory`, or the session key (`telegram:777` …). */
  key: string;
  kind: "chat" | "job" | "memory";
  /** For a job: its id and name (null once deleted). */
  jobId?: number;
  jobName?: string | null;
}

export interface UsageSummary {
  since: number;
  until: number;
  totals: UsageTotals;
  byModel: ModelUsage[];
  byOrigin: OriginUsage[];
}

interface TotalsRow {
  calls: number | null;
  prompt: number | null;
  completion: number | null;
  estimated: number | null;
  cost: number | null;
  unpriced: number | null;
}

const TOTALS = `SUM(calls) AS calls, SUM(prompt_tokens) AS prompt, SUM(completion_tokens) AS completion,
  SUM(estimated) AS estimated, SUM(cost_usd) AS cost, SUM(unpriced) AS unpriced`;

/** The ledger's recent rows and the daily totals of the rows retention pruned (see usage-rollup.ts). */
const USAGE_ROWS = `(
  SELECT at, origin, session_key, job_id, kind, model, 1 AS calls, prompt_tokens, completion_tokens, estimated,
    cost_usd, cost_usd IS NULL AS unpriced
  FROM llm_usage WHERE at >= @since AND at < @until
  UNION ALL
  SELECT at, origin, session_key, job_id, kind, model, calls, prompt_tokens, completion_tokens, estimated,
    cost_usd, unpriced
  FROM llm_usage_daily WHERE at >= @since AND at < @until
) AS usage_rows`;

const ORIGIN_KEY = `CASE WHEN job_id IS NOT NULL THEN 'job:' || job_id
  WHEN origin = 'memory' THEN 'memory' ELSE session_key END`;

function totalsOf(row: TotalsRow): UsageTotals {
  const promptTokens = row.prompt ?? 0;
  const completionTokens = row.completion ?? 0;
  return {
    calls: row.calls ?? 0,
    promptTokens,
    completionTokens,
    tokens: promptTokens + completionTokens,
    costUsd: row.cost,
    estimatedCalls: row.estimated ?? 0,
    unpricedCalls: row.unpriced ?? 0,
  };
}

/** Totals by model and by origin for calls in [since, until): what `/usage`, the CLI and the dashboard show. */
export function summarizeUsage(db: Db, since: number, until: number): UsageSummary {
  // Rows queued in this process (a call's row waits for its step's commit) are counted too.
  flushQueuedWrites(db);
  const totals = totalsOf(
    totalsRows.only(db.prepare(`SELECT ${TOTALS} FROM ${USAGE_ROWS}`).get({ since, until })),
  );
  const byModel = byModelRows
    .all(
      db
        .prepare(
          `SELECT model, kind, ${TOTALS} FROM ${USAGE_ROWS}
         GROUP BY model, kind ORDER BY SUM(prompt_tokens + completion_tokens) DESC, model`,
        )
        .all({ since, until }),
    )
    .map((row) => ({ model: row.model, kind: row.kind, ...totalsOf(row) }));
  const byOrigin = byOriginRows
    .all(
      db
        .prepare(
          `SELECT ${ORIGIN_KEY} AS origin_key, MIN(job_id) AS job_id, MIN(cron_jobs.name) AS job_name, ${TOTALS}
         FROM ${USAGE_ROWS} LEFT JOIN cron_jobs ON cron_jobs.id = usage_rows.job_id
         GROUP BY origin_key ORDER BY SUM(prompt_tokens + completion_tokens) DESC, origin_key`,
        )
        .all({ since, until }),
    )
    .map((row): OriginUsage => {
      const base = totalsOf(row);
      if (row.job_id !== null) {
        return { key: row.origin_key, kind: "job", jobId: row.job_id, jobName: row.job_name, ...base };
      }
      return { key: row.origin_key, kind: row.origin_key === "memory" ? "memory" : "chat", ...base };
    });
  return { since, until, totals, byModel, byOrigin };
}
