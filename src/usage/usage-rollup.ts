import { z } from "zod";
import { row } from "../lib/row.js";
import type { Db } from "../store/index.js";
import { flushQueuedWrites } from "../store/queued-writes.js";
import { dayAt } from "./calendar.js";

const ledgerRows = row(
  z.object({
    id: z.number(),
    at: z.number(),
    origin: z.string(),
    session_key: z.string(),
    job_id: z.number().nullable(),
    kind: z.string(),
    model: z.string(),
    prompt_tokens: z.number(),
    completion_tokens: z.number(),
    estimated: z.number(),
    cost_usd: z.number().nullable(),
  }),
  "llm_usage",
);

interface LedgerRow {
  id: number;
  at: number;
  origin: string;
  session_key: string;
  job_id: number | null;
  kind: string;
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  estimated: number;
  cost_usd: number | null;
}

interface DailyTotals {
  day: string;
  at: number;
  origin: string;
  sessionKey: string;
  jobId: number | null;
  kind: string;
  model: string;
  calls: number;
  promptTokens: number;
  completionTokens: number;
  estimated: number;
  costUsd: number | null;
  unpriced: number;
}

/**
 * Moves up to `limit` ledger rows older than `before` into `llm_usage_daily` (summed per local day in
 * `timeZone`, origin, session, job, kind and model) and deletes them, in one transaction. Returns how
 * many rows were moved; the summaries read both tables, so totals never change.
 */
export function rollUpUsage(db: Db, before: number, timeZone: string, limit: number): number {
  // Rows queued in this process (a call's row waits for its step's commit) are counted too.
  flushQueuedWrites(db);
  const rows = ledgerRows.all(
    db
      .prepare(
        `SELECT id, at, origin, session_key, job_id, kind, model, prompt_tokens, completion_tokens, estimated, cost_usd
       FROM llm_usage WHERE at < ? ORDER BY at LIMIT ?`,
      )
      .all(before, limit),
  );
  if (rows.length === 0) return 0;
  const groups = new Map<string, DailyTotals>();
  for (const row of rows) {
    const day = dayAt(row.at, timeZone);
    const key = JSON.stringify([day.date, row.origin, row.session_key, row.job_id, row.kind, row.model]);
    let group = groups.get(key);
    if (!group) {
      group = {
        day: day.date,
        at: day.start,
        origin: row.origin,
        sessionKey: row.session_key,
        jobId: row.job_id,
        kind: row.kind,
        model: row.model,
        calls: 0,
        promptTokens: 0,
        completionTokens: 0,
        estimated: 0,
        costUsd: null,
        unpriced: 0,
      };
      groups.set(key, group);
    }
    group.calls++;
    group.promptTokens += row.prompt_tokens;
    group.completionTokens += row.completion_tokens;
    group.estimated += row.estimated;
    if (row.cost_usd === null) group.unpriced++;
    else group.costUsd = (group.costUsd ?? 0) + row.cost_usd;
  }
  const add = db.prepare(
    `UPDATE llm_usage_daily SET calls = calls + @calls, prompt_tokens = prompt_tokens + @promptTokens,
       completion_tokens = completion_tokens + @completionTokens, estimated = estimated + @estimated,
       cost_usd = CASE WHEN @costUsd IS NULL THEN cost_usd ELSE IFNULL(cost_usd, 0) + @costUsd END,
       unpriced = unpriced + @unpriced
     WHERE day = @day AND origin = @origin AND session_key = @sessionKey AND IFNULL(job_id, -1) = IFNULL(@jobId, -1)
       AND kind = @kind AND model = @model`,
  );
  const insert = db.prepare(
    `INSERT INTO llm_usage_daily (day, at, origin, session_key, job_id, kind, model, calls, prompt_tokens,
       completion_tokens, estimated, cost_usd, unpriced)
     VALUES (@day, @at, @origin, @sessionKey, @jobId, @kind, @model, @calls, @promptTokens, @completionTokens,
       @estimated, @costUsd, @unpriced)`,
  );
  const remove = db.prepare("DELETE FROM llm_usage WHERE id = ?");
  db.transaction(() => {
    for (const group of groups.values()) {
      if (add.run(group).changes === 0) insert.run(group);
    }
    for (const row of rows) remove.run(row.id);
  })();
  return rows.length;
}
