import type { Migration } from "./index.js";

/**
 * Cron outcomes: a run may be `missed` (its slot passed while Magpie was down or held up and no run was made).
 * SQLite can't change a CHECK constraint, so `cron_runs` is rebuilt with its rows and indexes.
 */
export const cronOutcomesMigration: Migration = {
  version: 17,
  name: "scheduler: cron_runs status may be 'missed'",
  up: `
    CREATE TABLE cron_runs_next (
      id INTEGER PRIMARY KEY,
      job_id INTEGER NOT NULL REFERENCES cron_jobs (id) ON DELETE CASCADE,
      scheduled_at INTEGER,
      started_at INTEGER NOT NULL,
      finished_at INTEGER,
      duration_ms INTEGER,
      status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'error', 'timeout', 'skipped', 'missed')),
      trigger TEXT NOT NULL CHECK (trigger IN ('schedule', 'manual', 'catch_up')),
      output TEXT,
      delivery TEXT,
      delivery_state TEXT NOT NULL DEFAULT 'none'
        CHECK (delivery_state IN ('none', 'pending', 'delivered', 'failed'))
    );
    INSERT INTO cron_runs_next SELECT id, job_id, scheduled_at, started_at, finished_at, duration_ms, status,
      trigger, output, delivery, delivery_state FROM cron_runs;
    DROP TABLE cron_runs;
    ALTER TABLE cron_runs_next RENAME TO cron_runs;
    CREATE INDEX cron_runs_job ON cron_runs (job_id, id);
    CREATE INDEX cron_runs_delivery ON cron_runs (delivery_state) WHERE delivery_state = 'pending';
  `,
};
