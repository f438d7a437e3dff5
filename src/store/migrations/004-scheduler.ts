import type { Migration } from "./index.js";

/** Scheduled jobs and their run history. `next_run_at` is the single source of truth for firing. */
export const schedulerMigration: Migration = {
  version: 4,
  name: "scheduler: cron_jobs, cron_runs",
  up: `
    CREATE TABLE cron_jobs (
      id INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      schedule_kind TEXT NOT NULL CHECK (schedule_kind IN ('cron', 'once')),
      expression TEXT,
      timezone TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('shell', 'agent', 'message')),
      payload TEXT NOT NULL,
      agent TEXT,
      tool_set TEXT,
      deliver TEXT NOT NULL,
      enabled INTEGER NOT NULL DEFAULT 1,
      source TEXT NOT NULL DEFAULT 'chat' CHECK (source IN ('chat', 'config', 'cli')),
      created_by TEXT,
      next_run_at INTEGER,
      last_run_at INTEGER,
      run_requested_at INTEGER,
      completed_at INTEGER,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX cron_jobs_config_name ON cron_jobs (name) WHERE source = 'config';
    CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at) WHERE enabled = 1;

    CREATE TABLE cron_runs (
      id INTEGER PRIMARY KEY,
      job_id INTEGER NOT NULL REFERENCES cron_jobs (id) ON DELETE CASCADE,
      scheduled_at INTEGER,
      started_at INTEGER NOT NULL,
      finished_at INTEGER,
      duration_ms INTEGER,
      status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'error', 'timeout', 'skipped')),
      trigger TEXT NOT NULL CHECK (trigger IN ('schedule', 'manual', 'catch_up')),
      output TEXT,
      delivery TEXT,
      delivery_state TEXT NOT NULL DEFAULT 'none'
        CHECK (delivery_state IN ('none', 'pending', 'delivered', 'failed'))
    );
    CREATE INDEX cron_runs_job ON cron_runs (job_id, id);
    CREATE INDEX cron_runs_delivery ON cron_runs (delivery_state) WHERE delivery_state = 'pending';
  `,
};
