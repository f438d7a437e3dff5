import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { atomic } from "./atomic.js";
import type { Db } from "./database.js";

const DAY_MS = 86_400_000;

/** One kind of row retention prunes: the finished rows of a table older than a cutoff. */
export interface PruneTarget {
  /** Config key that sets the days (`auditDays` …), for logs and reports. */
  key: string;
  table: string;
  /** Days to keep; null keeps forever. */
  days: number | null;
  /**
   * Deletes up to `limit` rows older than `before` in one transaction; returns how many. Only finished rows:
   * a pending or processing inbox row, or a pending outbox row, is never a candidate.
   */
  prune(before: number, limit: number): number;
}

export interface RetentionLimits {
  /** Rows per transaction (the app keeps writing between batches). */
  batchSize: number;
  /** Rows per target per run; the rest waits for the next run, which then comes sooner. */
  maxRowsPerRun: number;
}

export interface PruneReport {
  /** Rows deleted per config key. */
  deleted: Record<string, number>;
  /** True when a target hit `maxRowsPerRun` and still has old rows. */
  more: boolean;
}

export const DEFAULT_LIMITS: RetentionLimits = { batchSize: 1000, maxRowsPerRun: 100_000 };

/**
 * Deletes the oldest rows by their time column (`at` …): each batch reads a range of that column's index
 * (migration 024), so a run where nothing is old reads nothing — ordering by id instead walked every row of the
 * table, newest included, before finding that out.
 */
function deleteOldest(db: Db, table: string, time: string, where?: string) {
  const statement = db.prepare(
    `DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ${time} < @before${where ? ` AND ${where}` : ""} ORDER BY ${time} LIMIT @limit)`,
  );
  return (before: number, limit: number) => statement.run({ before, limit }).changes;
}

/**
 * An outbox row's failover records go with it: the kv rows `failover:<id>`, `failover:copy:<id>` and
 * `failover:also:<id>` (src/notify/delivery-failover.ts), one or more per job report or trigger delivery that also
 * went to a phone — kept until then, they grew with every such delivery. The key range reads the primary key's
 * index; the count returned is the outbox rows'.
 */
function withFailoverRecords(db: Db, prune: PruneTarget["prune"]): PruneTarget["prune"] {
  const orphans = db.prepare(
    `DELETE FROM kv WHERE key >= 'failover:' AND key < 'failover;'
       AND NOT EXISTS (SELECT 1 FROM outbox WHERE outbox.id =
         CAST(replace(replace(substr(kv.key, 10), 'copy:', ''), 'also:', '') AS INTEGER))`,
  );
  return (before, limit) =>
    atomic(db, () => {
      const deleted = prune(before, limit);
      if (deleted > 0) orphans.run();
      return deleted;
    });
}

/** The core tables: audit log, inbox (and its trace rows), outbox, conversation history. */
export function storeTargets(
  db: Db,
  days: {
    auditDays: number | null;
    inboxDays: number | null;
    outboxDays: number | null;
    messagesDays: number | null;
  },
): PruneTarget[] {
  return [
    {
      key: "auditDays",
      table: "audit",
      days: days.auditDays,
      prune: deleteOldest(db, "audit", "at"),
    },
    {
      key: "inboxDays",
      table: "inbox",
      days: days.inboxDays,
      // A reply still waiting in the outbox keeps its inbox row (it threads the reply and reports the turn).
      prune: deleteOldest(
        db,
        "inbox",
        "received_at",
        `status IN ('done', 'interrupted', 'failed')
         AND NOT EXISTS (SELECT 1 FROM outbox WHERE outbox.inbox_id = inbox.id AND outbox.status = 'pending')`,
      ),
    },
    {
      // The trace of a message goes with it.
      key: "inboxDays",
      table: "trace_events",
      days: days.inboxDays,
      prune: deleteOldest(db, "trace_events", "at"),
    },
    {
      key: "outboxDays",
      table: "outbox",
      days: days.outboxDays,
      prune: withFailoverRecords(
        db,
        deleteOldest(db, "outbox", "created_at", "status IN ('sent', 'failed')"),
      ),
    },
    {
      key: "messagesDays",
      table: "messages",
      days: days.messagesDays,
      prune: deleteOldest(db, "messages", "created_at"),
    },
  ];
}

/**
 * Prunes every target once: batches of `batchSize` rows, each its own transaction, yielding to the event
 * loop in between so turns and deliveries go on; at most `maxRowsPerRun` rows per target.
 */
export async function pruneOnce(
  targets: PruneTarget[],
  now: number,
  limits: RetentionLimits = DEFAULT_LIMITS,
): Promise<PruneReport> {
  const report: PruneReport = { deleted: {}, more: false };
  for (const target of targets) {
    if (target.days === null) continue;
    const before = now - target.days * DAY_MS;
    let deleted = 0;
    while (deleted < limits.maxRowsPerRun) {
      const batch = target.prune(before, Math.min(limits.batchSize, limits.maxRowsPerRun - deleted));
      deleted += batch;
      if (batch < limits.batchSize) break;
      await yieldToEventLoop();
    }
    if (deleted >= limits.maxRowsPerRun) report.more = true;
    report.deleted[target.key] = (report.deleted[target.key] ?? 0) + deleted;
  }
  return report;
}
