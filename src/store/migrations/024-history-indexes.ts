import type { Migration } from "./index.js";

/**
 * A message costs the same on day 1 and day 300 (issue 37): every statement on the message path finds its rows
 * through an index instead of walking a table that grows with history (test/store/query-plans.test.ts).
 * - `outbox_due`: the outbox worker's "pending and due, oldest first" read walked the whole outbox by id
 *   (ORDER BY id won over the partial index on next_attempt_at) — 0.9 s per message at 1,000,000 replies;
 *   now it walks the pending rows only.
 * - `outbox_inbox`: the replies of a message (`magpie trace`, retention's "reply still pending" check).
 * - `memories_core`: the core memories shown to every turn, most used first, were sorted in full per turn.
 * - `cron_runs_running`: the scheduler's start-up look for runs a restart interrupted read every run ever made.
 * - `inbox_received`, `outbox_created`, `messages_created`: retention finds rows past their days by range
 *   instead of reading every row of the table once a day.
 */
export const historyIndexesMigration: Migration = {
  version: 24,
  name: "store: indexes that keep the message path flat as history grows",
  up: `
    CREATE INDEX outbox_due ON outbox (id, next_attempt_at) WHERE status = 'pending';
    CREATE INDEX outbox_inbox ON outbox (inbox_id) WHERE inbox_id IS NOT NULL;
    CREATE INDEX memories_core ON memories (agent, access_count, updated_at) WHERE category = 'core';
    CREATE INDEX cron_runs_running ON cron_runs (id) WHERE status = 'running';
    CREATE INDEX inbox_received ON inbox (received_at);
    CREATE INDEX outbox_created ON outbox (created_at);
    CREATE INDEX messages_created ON messages (created_at);
  `,
};
