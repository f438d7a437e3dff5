import type { Migration } from "./index.js";

/**
 * Voice replies: the usage ledger records `/audio/speech` calls as kind `speech`. SQLite can't change a CHECK
 * constraint, so `llm_usage` is rebuilt with its rows and indexes.
 */
export const speechUsageMigration: Migration = {
  version: 21,
  name: "usage: llm_usage kind may be 'speech'",
  up: `
    CREATE TABLE llm_usage_next (
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
      kind TEXT NOT NULL CHECK (kind IN ('chat', 'embedding', 'transcription', 'vision', 'speech')),
      model TEXT NOT NULL,
      prompt_tokens INTEGER NOT NULL,
      completion_tokens INTEGER NOT NULL,
      estimated INTEGER NOT NULL,
      cost_usd REAL
    );
    INSERT INTO llm_usage_next SELECT id, at, origin, session_key, history_key, turn_id, job_id, run_id, task_id,
      agent, kind, model, prompt_tokens, completion_tokens, estimated, cost_usd FROM llm_usage;
    DROP TABLE llm_usage;
    ALTER TABLE llm_usage_next RENAME TO llm_usage;
    CREATE INDEX llm_usage_at ON llm_usage (at);
    CREATE INDEX llm_usage_session ON llm_usage (session_key, at);
    CREATE INDEX llm_usage_job_run ON llm_usage (job_id, run_id) WHERE job_id IS NOT NULL;
    CREATE INDEX llm_usage_turn ON llm_usage (turn_id) WHERE turn_id IS NOT NULL;
  `,
};
