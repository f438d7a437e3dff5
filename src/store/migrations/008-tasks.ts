import type { Migration } from "./index.js";

/**
 * Background subagents (`spawn`): one row per task, so `/tasks` can list them and a restart turns the ones
 * still running into "interrupted" records instead of forgetting them.
 */
export const tasksMigration: Migration = {
  version: 8,
  name: "tasks: background subagents",
  up: `
    CREATE TABLE tasks (
      id TEXT PRIMARY KEY,
      session_key TEXT NOT NULL,
      channel TEXT NOT NULL,
      chat_id TEXT NOT NULL,
      thread_id TEXT,
      agent TEXT NOT NULL,
      created_by TEXT NOT NULL,
      label TEXT,
      task TEXT NOT NULL,
      status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'done', 'failed', 'timeout', 'cancelled', 'interrupted')),
      result_excerpt TEXT,
      started_at INTEGER NOT NULL,
      finished_at INTEGER
    );
    CREATE INDEX tasks_session ON tasks (session_key, started_at);
    CREATE INDEX tasks_running ON tasks (status) WHERE status = 'running';
  `,
};
