import { z } from "zod";
import { parseJson } from "../lib/parse-json.js";
import { row } from "../lib/row.js";
import { atomic } from "./atomic.js";
import type { Db } from "./database.js";
import type { InboundMessage, MessageOutcome } from "./message-records.js";
import { inboundMessageSchema, messageOutcomeSchema } from "./message-schemas.js";
import { prepared } from "./prepared.js";

export type InboxStatus = z.infer<typeof inboxStatusSchema>;

export interface InboxItem {
  id: number;
  sessionKey: string;
  status: InboxStatus;
  message: InboundMessage;
  /** How it ended (DESIGN.md → Every message has an outcome); null while it runs. */
  outcome: MessageOutcome | null;
  outcomeCause: string | null;
  receivedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

const inboxStatusSchema = z.enum(["pending", "processing", "done", "interrupted", "failed"]);

const inboxRows = row(
  z.object({
    id: z.number(),
    session_key: z.string(),
    status: inboxStatusSchema,
    payload: z.string(),
    outcome: messageOutcomeSchema.nullable(),
    outcome_cause: z.string().nullable(),
    received_at: z.number(),
    started_at: z.number().nullable(),
    finished_at: z.number().nullable(),
  }),
  "inbox",
);

type InboxRow = NonNullable<ReturnType<typeof inboxRows.one>>;

const toItem = (row: InboxRow): InboxItem => ({
  id: row.id,
  sessionKey: row.session_key,
  status: row.status,
  message: parseJson(row.payload, inboundMessageSchema, "inbox payload"),
  outcome: row.outcome ?? null,
  outcomeCause: row.outcome_cause ?? null,
  receivedAt: row.received_at,
  startedAt: row.started_at ?? null,
  finishedAt: row.finished_at ?? null,
});

/** Durable record of every accepted inbound message; `(channel, messageId)` is unique. */
export class InboxRepository {
  constructor(private readonly db: Db) {}

  /** Inserts the message; returns its id, or null when this `(channel, messageId)` was seen before. */
  insert(message: InboundMessage, sessionKey: string, status: InboxStatus = "pending"): number | null {
    const { raw: _raw, ...persisted } = message;
    const result = prepared(
      this.db,
      `INSERT INTO inbox (channel, message_id, session_key, payload, status, received_at)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (channel, message_id) DO NOTHING`,
    ).run(
      message.channel,
      message.messageId,
      sessionKey,
      JSON.stringify(persisted),
      status,
      message.receivedAt,
    );
    return result.changes === 1 ? Number(result.lastInsertRowid) : null;
  }

  get(id: number): InboxItem | undefined {
    const found = inboxRows.one(prepared(this.db, "SELECT * FROM inbox WHERE id = ?").get(id));
    return found ? toItem(found) : undefined;
  }

  setStatus(ids: number[], status: InboxStatus, at = Date.now()): void {
    const column = status === "processing" ? "started_at" : status === "pending" ? null : "finished_at";
    const statement = prepared(
      this.db,
      column
        ? `UPDATE inbox SET status = ?, ${column} = ? WHERE id = ?`
        : "UPDATE inbox SET status = ?, started_at = NULL WHERE id = ? AND ? IS NOT NULL",
    );
    atomic(this.db, () => {
      for (const id of ids) {
        if (column) statement.run(status, at, id);
        else statement.run(status, id, at);
      }
    });
  }

  /** Stores how the messages ended, with a short cause (failed, undeliverable). */
  setOutcome(ids: number[], outcome: MessageOutcome, cause?: string): void {
    const statement = prepared(this.db, "UPDATE inbox SET outcome = ?, outcome_cause = ? WHERE id = ?");
    atomic(this.db, () => {
      for (const id of ids) statement.run(outcome, cause ?? null, id);
    });
  }

  /**
   * The message a platform id names (`<channel>:<chatId>:<messageId>` in `magpie trace`); a channel whose ids are
   * unique per chat only keeps them as `<chatId>:<id>` (Telegram), found either way.
   */
  findByMessage(channel: string, chatId: string, messageId: string): InboxItem | undefined {
    const rows = inboxRows.all(
      this.db
        .prepare("SELECT * FROM inbox WHERE channel = ? AND message_id IN (?, ?)")
        .all(channel, messageId, `${chatId}:${messageId}`),
    );
    return rows.map(toItem).find((item) => item.message.chatId === chatId);
  }

  /** The newest messages, newest first; of one chat when `chat` is given. */
  recent(limit: number, chat?: { channel: string; chatId: string }): InboxItem[] {
    const rows = inboxRows.all(
      chat
        ? prepared(
            this.db,
            "SELECT * FROM inbox WHERE channel = ? AND (session_key = ? OR session_key LIKE ? ESCAPE '\\') ORDER BY id DESC LIMIT ?",
          ).all(
            chat.channel,
            `${chat.channel}:${chat.chatId}`,
            `${escapeLike(`${chat.channel}:${chat.chatId}`)}:%`,
            limit,
          )
        : prepared(this.db, "SELECT * FROM inbox ORDER BY id DESC LIMIT ?").all(limit),
    );
    return rows.map(toItem);
  }

  /** A session's newest messages, newest first (attachment_save looks for the last one that carried files). */
  recentOfSession(sessionKey: string, limit: number): InboxItem[] {
    return inboxRows
      .all(
        this.db
          .prepare("SELECT * FROM inbox WHERE session_key = ? ORDER BY id DESC LIMIT ?")
          .all(sessionKey, limit),
      )
      .map(toItem);
  }

  /** Items not finished before the last shutdown, oldest first. */
  unfinished(): InboxItem[] {
    const rows = inboxRows.all(
      prepared(this.db, "SELECT * FROM inbox WHERE status IN ('pending', 'processing') ORDER BY id").all(),
    );
    return rows.map(toItem);
  }

  countByStatus(): Record<string, number> {
    const rows = statusCounts.all(
      prepared(this.db, "SELECT status, COUNT(*) AS n FROM inbox GROUP BY status").all(),
    );
    return Object.fromEntries(rows.map((row) => [row.status, row.n]));
  }
}

const statusCounts = row(z.object({ status: z.string(), n: z.number() }), "inbox status count");

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}
