import { statSync } from "node:fs";
import { z } from "zod";
import { parseJson } from "../../lib/parse-json.js";
import { row } from "../../lib/row.js";
import type { Db } from "../../store/database.js";
import type { Budgets, Cap, CapName } from "../../usage/budget-periods.js";
import { dayAt } from "../../usage/calendar.js";

const spentRow = row(
  z.object({ tokens: z.number(), usd: z.number() }).extend(z.object({ calls: z.number() }).shape),
  "home-data",
);
const spentByScopeRows = row(
  z.object({ tokens: z.number(), usd: z.number() }).extend(z.object({ scope: z.string() }).shape),
  "home-data",
);
const problemRunRows = row(
  z.object({
    id: z.number(),
    jobId: z.number(),
    jobName: z.string(),
    status: z.enum(["error", "timeout", "missed"]),
    scheduledAt: z.number().nullable(),
    startedAt: z.number(),
    durationMs: z.number().nullable(),
    output: z.string().nullable(),
  }),
  "cron_runs problem",
);
const failedMessageRows = row(
  z.object({
    id: z.number(),
    sessionKey: z.string(),
    outcome: z.enum(["failed", "undeliverable"]),
    cause: z.string().nullable(),
    at: z.number(),
    preview: z.string(),
    failover: z.string().nullable(),
  }),
  "inbox failed",
);
const undeliveredRows = row(
  z.object({
    outboxId: z.number(),
    origin: z.string(),
    channel: z.string(),
    chatId: z.string(),
    error: z.string().nullable(),
    at: z.number(),
    preview: z.string(),
    failover: z.string().nullable(),
  }),
  "outbox undelivered",
);
const failoverData = z.object({ path: z.string().nullable().optional(), already: z.string().optional() });
const inboxDepthRow = row(
  z.object({ waiting: z.number().nullable(), running: z.number().nullable() }),
  "home-data",
);
const outboxDepthRow = row(z.object({ n: z.number(), oldest: z.number().nullable() }), "home-data");

/**
 * What the home page reads from the database: today's spend against each budget, cron runs that failed or were
 * missed, messages that failed or could not be delivered, the queue and the size of the database. Each query is
 * bounded (an index, a small table or a fixed window), since the page refreshes on every change.
 */

/** Tokens and USD spent in one scope. */
export interface Spent {
  tokens: number;
  usd: number;
}

/** One configured cap and today's spend against it (the fullest scope, for the per-chat/job/turn caps). */
export interface BudgetLine {
  cap: CapName;
  limit: Cap;
  spent: Spent;
  /** How full it is, 0…1+ (the larger of the token and USD fractions). */
  fraction: number;
  /** The fullest chat, job run or turn today (absent for `daily`, or when nothing was spent). */
  scope?: string;
}

export interface SpendToday {
  date: string;
  total: Spent & { calls: number };
  budgets: BudgetLine[];
}

const ORDER: CapName[] = ["daily", "perChat", "perJobRun", "perTurn"];
const SUMS =
  "COUNT(*) AS calls, COALESCE(SUM(prompt_tokens + completion_tokens), 0) AS tokens, COALESCE(SUM(cost_usd), 0) AS usd";

/** How full `spent` is against `limit` (the cap bites on whichever of tokens and USD comes first). */
export function fractionOf(spent: Spent, limit: Cap): number {
  const parts = [limit.tokens ? spent.tokens / limit.tokens : 0, limit.usd ? spent.usd / limit.usd : 0];
  return Math.max(...parts);
}

/**
 * Today's (in `timeZone`) spend from the usage ledger: the total, and for each configured cap the spend it
 * counts — all of today for `daily`, the fullest chat for `perChat`, the fullest job run and turn for the others.
 */
export function spendToday(db: Db, budgets: Budgets, timeZone: string, now: number): SpendToday {
  const day = dayAt(now, timeZone);
  const window = { start: day.start, end: day.end };
  const total = spentRow.only(
    db.prepare(`SELECT ${SUMS} FROM llm_usage WHERE at >= @start AND at < @end`).get(window),
  );
  const scopes: Record<Exclude<CapName, "daily">, string> = {
    perChat: `SELECT session_key AS scope, ${SUMS} FROM llm_usage
      WHERE at >= @start AND at < @end AND origin != 'memory' GROUP BY session_key`,
    perJobRun: `SELECT 'job ' || COALESCE((SELECT name FROM cron_jobs WHERE id = job_id), '#' || job_id)
        || ' run ' || run_id AS scope, ${SUMS} FROM llm_usage
      WHERE at >= @start AND at < @end AND job_id IS NOT NULL AND run_id IS NOT NULL GROUP BY job_id, run_id`,
    perTurn: `SELECT 'turn ' || turn_id AS scope, ${SUMS} FROM llm_usage
      WHERE at >= @start AND at < @end AND turn_id IS NOT NULL GROUP BY turn_id`,
  };
  const lines: BudgetLine[] = [];
  for (const cap of ORDER) {
    const limit = budgets[cap];
    if (!limit) continue;
    if (cap === "daily") {
      lines.push({ cap, limit, spent: total, fraction: fractionOf(total, limit) });
      continue;
    }
    const rows = spentByScopeRows.all(db.prepare(scopes[cap]).all(window));
    let fullest: BudgetLine = { cap, limit, spent: { tokens: 0, usd: 0 }, fraction: 0 };
    for (const row of rows) {
      const fraction = fractionOf(row, limit);
      if (fraction > fullest.fraction || fullest.scope === undefined) {
        fullest = { cap, limit, spent: { tokens: row.tokens, usd: row.usd }, fraction, scope: row.scope };
      }
    }
    lines.push(fullest);
  }
  return { date: day.date, total, budgets: lines };
}

/** A cron run that failed (error, timeout) or was missed. */
export interface ProblemRun {
  id: number;
  jobId: number;
  jobName: string;
  status: "error" | "timeout" | "missed";
  scheduledAt: number | null;
  startedAt: number;
  durationMs: number | null;
  output: string | null;
}

/** The newest failed or missed cron runs (cron_runs keeps a few runs per job). */
export function problemRuns(db: Db, limit = 5): ProblemRun[] {
  return problemRunRows.all(
    db
      .prepare(
        `SELECT r.id, r.job_id AS jobId, j.name AS jobName, r.status, r.scheduled_at AS scheduledAt,
         r.started_at AS startedAt, r.duration_ms AS durationMs, substr(r.output, 1, 300) AS output
       FROM cron_runs r JOIN cron_jobs j ON j.id = r.job_id
       WHERE r.status IN ('error', 'timeout', 'missed') ORDER BY r.id DESC LIMIT ?`,
      )
      .all(limit),
  );
}

/** How far back (in inbox rows) the home page looks for failed messages: the newest ones are what matter. */
const RECENT_INBOX_ROWS = 2_000;

/** A message that failed or could not be delivered, with the start of its text. */
export interface FailedMessage {
  id: number;
  sessionKey: string;
  outcome: "failed" | "undeliverable";
  cause: string | null;
  at: number;
  /** The first 120 characters of its text (cut in SQL: a message may be megabytes long). */
  preview: string;
  /**
   * What delivery failover did with its refused reply (DESIGN.md → Delivery failover): undefined when it was not
   * tried, null when no path delivered it, else the path that did.
   */
  failedOver?: string | null;
  /** The reply had already reached the owner on `failedOver` by its own delivery: the failover sent nothing. */
  failoverAlready?: true;
}

/** A message's newest `failover` trace row (its refused reply sent through `delivery.fallback`), if any. */
const FAILOVER_ROW_OF_INBOX = `(SELECT data FROM trace_events
  WHERE kind = 'failover' AND inbox_id = inbox.id ORDER BY id DESC LIMIT 1)`;

/** A `failover` trace row's path: undefined without a row, null when no path delivered. */
function failoverPath(data: string | null): { failedOver?: string | null; failoverAlready?: true } {
  if (data === null) return {};
  const parsed = parseJson(data, failoverData, "failover row");
  return { failedOver: parsed.path ?? null, ...(parsed.already ? { failoverAlready: true } : {}) };
}

/** The newest messages whose outcome is `failed` or `undeliverable`, among the last 2,000 received. */
export function failedMessages(db: Db, limit = 5): FailedMessage[] {
  const rows = failedMessageRows.all(
    db
      .prepare(
        `SELECT id, session_key AS sessionKey, outcome, outcome_cause AS cause,
         COALESCE(finished_at, received_at) AS at,
         COALESCE(substr(json_extract(payload, '$.text'), 1, 120), '') AS preview,
         ${FAILOVER_ROW_OF_INBOX} AS failover
       FROM (SELECT id FROM inbox ORDER BY id DESC LIMIT ${RECENT_INBOX_ROWS}) AS recent
       JOIN inbox USING (id)
       WHERE outcome IN ('failed', 'undeliverable') ORDER BY id DESC LIMIT ?`,
      )
      .all(limit),
  );
  return rows.map(({ failover, ...item }) => ({ ...item, ...failoverPath(failover) }));
}

/**
 * A job report, trigger delivery or alert (no inbound message behind it) the platform refused: where it was going,
 * why not, and what delivery failover did with it — `failover` is undefined when it was not tried (no fallback
 * list), null when no path delivered, else the path that did.
 */
export interface UndeliveredItem {
  outboxId: number;
  origin: string;
  target: string;
  error: string | null;
  at: number;
  /** The first 120 characters of its text. */
  preview: string;
  failover?: string | null;
  /** The report had already reached the owner on `failover` by its own delivery: the failover sent nothing. */
  failoverAlready?: true;
}

/** The newest failed outbox items without an inbound message, among the last 2,000 queued. */
export function undeliveredItems(db: Db, limit = 5): UndeliveredItem[] {
  const rows = undeliveredRows.all(
    db
      .prepare(
        `SELECT outbox.id AS outboxId, origin, channel, chat_id AS chatId, last_error AS error, created_at AS at,
         COALESCE(substr(json_extract(payload, '$.text'), 1, 120), '') AS preview,
         (SELECT data FROM trace_events WHERE kind = 'failover' AND outbox_id = outbox.id ORDER BY id DESC LIMIT 1)
           AS failover
       FROM (SELECT id FROM outbox ORDER BY id DESC LIMIT ${RECENT_INBOX_ROWS}) AS recent
       JOIN outbox USING (id)
       WHERE status = 'failed' AND inbox_id IS NULL ORDER BY outbox.id DESC LIMIT ?`,
      )
      .all(limit),
  );
  return rows.map(({ channel, chatId, failover, ...item }) => {
    const { failedOver, failoverAlready } = failoverPath(failover);
    return {
      ...item,
      target: `${channel}:${chatId}`,
      ...(failedOver === undefined ? {} : { failover: failedOver }),
      ...(failoverAlready ? { failoverAlready } : {}),
    };
  });
}

export interface QueueDepth {
  /** Inbox messages waiting for a turn. */
  waiting: number;
  /** Inbox messages a turn is working on. */
  running: number;
  /** Replies and notices waiting to be delivered (or retried). */
  outbox: number;
  /** When the oldest of them was queued (null when none). */
  outboxOldestAt: number | null;
}

/** The inbox's open messages and the outbox's pending items (both read through their partial indexes). */
export function queueDepth(db: Db): QueueDepth {
  const inbox = inboxDepthRow.only(
    db
      .prepare(
        "SELECT SUM(status = 'pending') AS waiting, SUM(status = 'processing') AS running FROM inbox WHERE status IN ('pending', 'processing')",
      )
      .get(),
  );
  const outbox = outboxDepthRow.only(
    db.prepare("SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox WHERE status = 'pending'").get(),
  );
  return {
    waiting: inbox.waiting ?? 0,
    running: inbox.running ?? 0,
    outbox: outbox.n,
    outboxOldestAt: outbox.oldest,
  };
}

/** The database's size on disk: the file and its write-ahead log (null for an in-memory database). */
export function databaseBytes(db: Db): number | null {
  if (db.memory || db.name === ":memory:") return null;
  const size = (file: string) => {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  };
  return size(db.name) + size(`${db.name}-wal`);
}

/** Bytes as people read them: "812 KB", "48.3 MB", "1.2 GB". */
export function humanBytes(bytes: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}
