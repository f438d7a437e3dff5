import type { Statement } from "better-sqlite3";
import { z } from "zod";
import { row } from "../lib/row.js";
import type { ChatMessage } from "../llm/types.js";
import type { Db } from "./database.js";
import { prepared } from "./prepared.js";
import { flushQueuedWrites } from "./queued-writes.js";

const messageRows = row(
  z.object({
    id: z.number(),
    role: z.enum(["user", "assistant", "tool"]),
    content: z.string().nullable(),
    tool_calls: z.string().nullable(),
    tool_call_id: z.string().nullable(),
    tokens: z.number(),
  }),
  "messages",
);
const tokenCount = z.number();
const summaryRow = row(z.object({ summary: z.string().nullable() }), "history");
const countRow = row(z.object({ n: z.number(), t: z.number() }), "history");

export interface StoredMessage {
  id: number;
  message: ChatMessage;
  tokens: number;
}

interface MessageRow {
  id: number;
  role: "user" | "assistant" | "tool";
  content: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  tokens: number;
}

function toMessage(row: MessageRow): ChatMessage {
  if (row.role === "tool")
    return { role: "tool", tool_call_id: row.tool_call_id ?? "", content: row.content ?? "" };
  if (row.role === "assistant") {
    const toolCalls = row.tool_calls ? JSON.parse(row.tool_calls) : undefined;
    return toolCalls?.length
      ? { role: "assistant", content: row.content, tool_calls: toolCalls }
      : { role: "assistant", content: row.content };
  }
  return { role: "user", content: row.content ?? "" };
}

const toStored = (row: MessageRow): StoredMessage => ({
  id: row.id,
  message: toMessage(row),
  tokens: row.tokens,
});

/** The columns a message is read from. */
const COLUMNS = "id, role, content, tool_calls, tool_call_id, tokens";
/**
 * Messages kept read (past this many, all are dropped and read afresh): the recent history of the chats in use, not
 * the whole table — at 20,000 the short memory soak's RSS grew ×1.54 (target ≤ ×1.5), the kept rows being heap.
 */
const KEPT_ROWS = 2_000;

/**
 * Each history row as read, checked and turned into a message once (issue 35, hot path): every turn reads the
 * chat's recent history again — twice, with the compaction check after it — and checking each row against its
 * schema, parsing its tool calls and building its message cost CPU and garbage that grew with the history. A
 * row is taken from here only when every column read now is the very value read then (a row id SQLite reuses
 * after a delete, holding another message, is read afresh); messages are never updated in place. What is handed
 * out is frozen: callers share it.
 */
class KeptRows {
  private readonly kept = new Map<number, { row: MessageRow; stored: StoredMessage }>();

  stored(raw: unknown): StoredMessage {
    const kept = isRecord(raw) && typeof raw.id === "number" ? this.kept.get(raw.id) : undefined;
    if (kept && isRecord(raw) && sameRow(kept.row, raw)) return kept.stored;
    const row = messageRows.only(raw);
    const stored = deepFreeze(toStored(row));
    if (this.kept.size >= KEPT_ROWS) this.kept.clear();
    this.kept.set(row.id, { row, stored });
    return stored;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function sameRow(row: MessageRow, raw: Record<string, unknown>): boolean {
  return (
    raw.role === row.role &&
    raw.content === row.content &&
    raw.tool_calls === row.tool_calls &&
    raw.tool_call_id === row.tool_call_id &&
    raw.tokens === row.tokens
  );
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** Per-session conversation history and its running summary. */
export class HistoryRepository {
  private readonly read = new KeptRows();
  private newestRows: Statement | undefined;
  private tokenRows: Statement | undefined;

  constructor(private readonly db: Db) {}

  ensureSession(sessionKey: string, agent: string, at = Date.now()): void {
    prepared(
      this.db,
      `INSERT INTO sessions (key, agent, created_at, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET agent = excluded.agent, updated_at = excluded.updated_at`,
    ).run(sessionKey, agent, at, at);
  }

  append(
    sessionKey: string,
    messages: Array<{ message: ChatMessage; tokens: number }>,
    at = Date.now(),
  ): void {
    const insert = prepared(
      this.db,
      "INSERT INTO messages (session_key, role, content, tool_calls, tool_call_id, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    this.db.transaction(() => {
      // A turn's messages are its last step's record: the step's queued ledger row goes in the same commit.
      flushQueuedWrites(this.db);
      for (const { message, tokens } of messages) {
        if (message.role === "system") continue;
        insert.run(
          sessionKey,
          message.role,
          message.content,
          message.role === "assistant" && message.tool_calls?.length
            ? JSON.stringify(message.tool_calls)
            : null,
          message.role === "tool" ? message.tool_call_id : null,
          tokens,
          at,
        );
      }
      prepared(this.db, "UPDATE sessions SET updated_at = ? WHERE key = ?").run(at, sessionKey);
    })();
  }

  /** The whole history of a session (the dashboard); a turn reads only its newest part (`newest`). */
  load(sessionKey: string): StoredMessage[] {
    const rows = messageRows.all(
      prepared(this.db, "SELECT * FROM messages WHERE session_key = ? ORDER BY id").all(sessionKey),
    );
    return rows.map(toStored);
  }

  /**
   * The newest messages whose tokens add up to at most `maxTokens`, oldest first; `more` when older ones exist.
   * Read newest first and stopped there, so a turn costs the same whatever the session holds (a history whose
   * compaction was held back by a budget cap grows; loading all of it made every turn slower).
   */
  newest(sessionKey: string, maxTokens: number): { messages: StoredMessage[]; more: boolean } {
    const messages: StoredMessage[] = [];
    let total = 0;
    let more = false;
    this.newestRows ??= this.db.prepare(
      `SELECT ${COLUMNS} FROM messages WHERE session_key = ? ORDER BY id DESC`,
    );
    for (const raw of this.newestRows.iterate(sessionKey)) {
      const stored = this.read.stored(raw);
      total += stored.tokens;
      if (total > maxTokens) {
        more = true;
        break;
      }
      messages.push(stored);
    }
    return { messages: messages.reverse(), more };
  }

  /**
   * True when the session's messages add up to more than `maxTokens` (the compaction check after each turn): read
   * newest first from their ids and token counts alone and stopped there, so no message is built to learn it.
   */
  exceeds(sessionKey: string, maxTokens: number): boolean {
    this.tokenRows ??= this.db
      .prepare("SELECT tokens FROM messages WHERE session_key = ? ORDER BY id DESC")
      .pluck();
    let total = 0;
    for (const tokens of this.tokenRows.iterate(sessionKey)) {
      total += tokenCount.parse(tokens);
      if (total > maxTokens) return true;
    }
    return false;
  }

  /**
   * The oldest messages before `beforeId`, oldest first, up to `maxTokens` (at least one): the part of a long
   * history one compaction summarizes.
   */
  oldest(sessionKey: string, beforeId: number, maxTokens: number): StoredMessage[] {
    const messages: StoredMessage[] = [];
    let total = 0;
    const rows = this.db
      .prepare(`SELECT ${COLUMNS} FROM messages WHERE session_key = ? AND id < ? ORDER BY id`)
      .iterate(sessionKey, beforeId);
    for (const raw of rows) {
      const stored = this.read.stored(raw);
      total += stored.tokens;
      if (total > maxTokens && messages.length > 0) break;
      messages.push(stored);
    }
    return messages;
  }

  summary(sessionKey: string): string | null {
    const row = summaryRow.one(
      prepared(this.db, "SELECT summary FROM sessions WHERE key = ?").get(sessionKey),
    );
    return row?.summary ?? null;
  }

  /** Replaces messages up to and including `throughId` with a summary, atomically. */
  compact(sessionKey: string, throughId: number, summary: string): void {
    this.db.transaction(() => {
      prepared(this.db, "DELETE FROM messages WHERE session_key = ? AND id <= ?").run(sessionKey, throughId);
      this.db
        .prepare("UPDATE sessions SET summary = ?, updated_at = ? WHERE key = ?")
        .run(summary, Date.now(), sessionKey);
    })();
  }

  reset(sessionKey: string): void {
    this.db.transaction(() => {
      prepared(this.db, "DELETE FROM messages WHERE session_key = ?").run(sessionKey);
      prepared(this.db, "UPDATE sessions SET summary = NULL WHERE key = ?").run(sessionKey);
    })();
  }

  stats(sessionKey: string): { messages: number; tokens: number; hasSummary: boolean } {
    const row = countRow.only(
      this.db
        .prepare("SELECT COUNT(*) AS n, COALESCE(SUM(tokens), 0) AS t FROM messages WHERE session_key = ?")
        .get(sessionKey),
    );
    return { messages: row.n, tokens: row.t, hasSummary: this.summary(sessionKey) !== null };
  }
}
