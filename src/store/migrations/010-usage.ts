import type { Migration } from "./index.js";

/**
 * The usage ledger: one row per LLM request (chat, embedding, transcription, vision), and the marks that keep a
 * budget alert to one per cap and period across restarts (DESIGN.md → Models, failover and spend).
 */
export const usageMigration: Migration = {
  version: 10,
  name: "usage: llm_usage ledger, budget_alerts",
  up: `
    CREATE TABLE llm_usage (
      id INTEGER PRIMARY KEY,
      at INTEGER NOT NULL,
      origin TEXT NOT NULL,
      session_key TEXT NOT NULL,
      history_key TEXT NOT NULL,
      turn_id TEXT,
      job_id INTEGER,
      run_id INTEGER,
      task_id TEXT,
      agent TEXT,
      kind TEXT NOT NULL CHECK (kind IN ('chat', 'embedding', 'transcription', 'vision')),
      model TEXT NOT NULL,
      prompt_tokens INTEGER NOT NULL,
      completion_tokens INTEGER NOT NULL,
      estimated INTEGER NOT NULL,
      cost_usd REAL
    );
    CREATE INDEX llm_usage_at ON llm_usage (at);
    CREATE INDEX llm_usage_session ON llm_usage (session_key, at);
    CREATE INDEX llm_usage_job_run ON llm_usage (job_id, run_id) WHERE job_id IS NOT NULL;
    CREATE INDEX llm_usage_turn ON llm_usage (turn_id) WHERE turn_id IS NOT NULL;

    CREATE TABLE budget_alerts (
      period_key TEXT PRIMARY KEY,
      cap TEXT NOT NULL,
      alerted_at INTEGER NOT NULL
    );
  `,
};
