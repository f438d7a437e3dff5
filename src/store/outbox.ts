import { z } from "zod";
import { parseJson } from "../lib/parse-json.js";
import { row } from "../lib/row.js";
import type { Db } from "./database.js";
import type { OutboundMessage, ReplyTarget } from "./message-records.js";
import { messageIdsSchema, outboundMessageSchema } from "./message-schemas.js";
import { prepared } from "./prepared.js";

const outboxOriginSchema = z.enum(["reply", "command", "notice", "cron", "message", "approval", "pairing"]);
export type OutboxOrigin = z.infer<typeof outboxOriginSchema>;

export interface OutboxItem {
  id: number;
  target: ReplyTarget;
  message: OutboundMessage;
  origin: OutboxOrigin;
  inboxId: number | null;
  status: "pending" | "sent" | "failed";
  attempts: number;
  nextAttemptAt: number;
  partsSent: number;
  platformMessageIds: string[];
  lastError: string | null;
  /** When it was queued (ms). */
  createdAt: number;
}

const outboxRows = row(
  z.object({
    id: z.number(),
    channel: z.string(),
    chat_id: z.string(),
    thread_id: z.string().nullable(),
    reply_to_message_id: z.string().nullable(),
    payload: z.string(),
    origin: outboxOriginSchema,
    inbox_id: z.number().nullable(),
    status: z.enum(["pending", "sent", "failed"]),
    attempts: z.number(),
    next_attempt_at: z.number(),
    parts_sent: z.number(),
    platform_message_ids: z.string(),
    last_error: z.string().nullable(),
    created_at: z.number(),
  }),
  "outbox",
);

type OutboxRow = NonNullable<ReturnType<typeof outboxRows.one>>;

const earliest = row(z.object({ at: z.number().nullable() }), "outbox next attempt");
const count = row(z.object({ n: z.number() }), "outbox count");

const toItem = (row: OutboxRow): OutboxItem => ({
  id: row.id,
  target: {
    channel: row.channel,
    chatId: row.chat_id,
    threadId: row.thread_id ?? undefined,
    replyToMessageId: row.reply_to_message_id ?? undefined,
  },
  message: parseJson(row.payload, outboundMessageSchema, "outbox payload"),
  origin: row.origin,
  inboxId: row.inbox_id,
  status: row.status,
  attempts: row.attempts,
  nextAttemptAt: row.next_attempt_at,
  partsSent: row.parts_sent,
  platformMessageIds: parseJson(row.platform_message_ids, messageIdsSchema, "outbox message ids"),
  lastError: row.last_error,
  createdAt: row.created_at,
});

export interface EnqueueOptions {
  origin?: OutboxOrigin;
  inboxId?: number | null;
  at?: number;
}

/** Durable queue of replies; an item is sent part by part and marked sent with the platform ids. */
export class OutboxRepository {
  constructor(private readonly db: Db) {}

  enqueue(target: ReplyTarget, message: OutboundMessage, options: EnqueueOptions = {}): number {
    const now = options.at ?? Date.now();
    const result = prepared(
      this.db,
      `INSERT INTO outbox (channel, chat_id, thread_id, reply_to_message_id, payload, origin, inbox_id,
                             next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      target.channel,
      target.chatId,
      target.threadId ?? null,
      target.replyToMessageId ?? null,
      JSON.stringify(message),
      options.origin ?? "reply",
      options.inboxId ?? null,
      now,
      now,
    );
    return Number(result.lastInsertRowid);
  }

  get(id: number): OutboxItem | undefined {
    const found = outboxRows.one(prepared(this.db, "SELECT * FROM outbox WHERE id = ?").get(id));
    return found ? toItem(found) : undefined;
  }

  /**
   * Pending items due at `now`, oldest first — never one queued behind an older pending item of its chat that is
   * still backing off (a platform outage: the newer reply must not overtake the older one when it ends).
   */
  due(now: number, limit = 50): OutboxItem[] {
    const rows = outboxRows.all(
      prepared(
        this.db,
        `SELECT * FROM outbox AS item WHERE status = 'pending' AND next_attempt_at <= ?
           AND NOT EXISTS (SELECT 1 FROM outbox AS older WHERE older.status = 'pending' AND older.id < item.id
             AND older.channel = item.channel AND older.chat_id = item.chat_id
             AND IFNULL(older.thread_id, '') = IFNULL(item.thread_id, '') AND older.next_attempt_at > ?)
         ORDER BY id LIMIT ?`,
      ).all(now, now, limit),
    );
    return rows.map(toItem);
  }

  /** Earliest next attempt among pending items, or null when none are pending. */
  nextDueAt(): number | null {
    const found = earliest.one(
      prepared(
        this.db,
        // An item behind an older pending one of its chat is due no sooner than that one (see `due`).
        `SELECT MIN(MAX(item.next_attempt_at, IFNULL((SELECT MAX(older.next_attempt_at) FROM outbox AS older
           WHERE older.status = 'pending' AND older.id < item.id AND older.channel = item.channel
             AND older.chat_id = item.chat_id AND IFNULL(older.thread_id, '') = IFNULL(item.thread_id, '')), 0)))
           AS at FROM outbox AS item WHERE item.status = 'pending'`,
      ).get(),
    );
    return found?.at ?? null;
  }

  pendingCount(): number {
    return (
      count.one(prepared(this.db, "SELECT COUNT(*) AS n FROM outbox WHERE status = 'pending'").get())?.n ?? 0
    );
  }

  recordPart(id: number, partIndex: number, platformMessageId: string): void {
    const item = this.get(id);
    if (!item) return;
    const ids = [...item.platformMessageIds];
    ids[partIndex] = platformMessageId;
    this.db
      .prepare("UPDATE outbox SET parts_sent = MAX(parts_sent, ?), platform_message_ids = ? WHERE id = ?")
      .run(partIndex + 1, JSON.stringify(ids), id);
  }

  markSent(id: number, platformMessageIds: string[], at = Date.now()): void {
    prepared(
      this.db,
      "UPDATE outbox SET status = 'sent', sent_at = ?, attempts = attempts + 1, platform_message_ids = ?, last_error = NULL WHERE id = ?",
    ).run(at, JSON.stringify(platformMessageIds), id);
  }

  markRetry(id: number, error: string, nextAttemptAt: number): void {
    this.db
      .prepare("UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?")
      .run(error, nextAttemptAt, id);
  }

  /** Puts an item off until `nextAttemptAt` without counting an attempt (its channel is not running). */
  postpone(id: number, reason: string, nextAttemptAt: number): void {
    this.db
      .prepare("UPDATE outbox SET last_error = ?, next_attempt_at = ? WHERE id = ?")
      .run(reason, nextAttemptAt, id);
  }

  /** Makes every pending item of `channel` due at `now` (the channel is running again). */
  resumeChannel(channel: string, now: number): number {
    return prepared(
      this.db,
      "UPDATE outbox SET next_attempt_at = ? WHERE status = 'pending' AND channel = ? AND next_attempt_at > ?",
    ).run(now, channel, now).changes;
  }

  markFailed(id: number, error: string): void {
    this.db
      .prepare("UPDATE outbox SET status = 'failed', attempts = attempts + 1, last_error = ? WHERE id = ?")
      .run(error, id);
  }
}
