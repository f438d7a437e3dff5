import type { Migration } from "./index.js";

/**
 * Daily totals of the usage ledger: when retention prunes `llm_usage` rows, their sums move here (one row
 * per local day, origin, session, job, kind and model), so `/usage` and `magpie usage` keep old months.
 */
export const usageDailyMigration: Migration = {
  version: 13,
  name: "usage: llm_usage_daily totals kept when ledger rows are pruned",
  up: `
    CREATE TABLE llm_usage_daily (
      id INTEGER PRIMARY KEY,
      day TEXT NOT NULL,
      at INTEGER NOT NULL,
      origin TEXT NOT NULL,
      session_key TEXT NOT NULL,
      job_id INTEGER,
      kind TEXT NOT NULL,
      model TEXT NOT NULL,
      calls INTEGER NOT NULL,
      prompt_tokens INTEGER NOT NULL,
      completion_tokens INTEGER NOT NULL,
      estimated INTEGER NOT NULL,
      cost_usd REAL,
      unpriced INTEGER NOT NULL
    );
    CREATE INDEX llm_usage_daily_at ON llm_usage_daily (at);
    CREATE UNIQUE INDEX llm_usage_daily_key
      ON llm_usage_daily (day, origin, session_key, IFNULL(job_id, -1), kind, model);
  `,
};
