import type { Statement } from "better-sqlite3";
import { z } from "zod";
import { row } from "../lib/row.js";
import type { ChatMessage } from "../llm/types.js";
import { atomic } from "./atomic.js";
import { ChangeCounters } from "./change-counters.js";
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

/**
 * A session's newest messages as a turn last read them (issue 35, hot path): with the session's change counter
 * (migration 037) read before them, the budget they were read for and whether older messages exist. Every turn of a
 * chat read the same rows again — 0.6 ms of the 3.5 ms from a message's arrival to its LLM request. A window is
 * used only while the counter has not moved; a turn's own `append` extends it when the counter moved by exactly the
 * rows it inserted (nobody else wrote in between); any other write — compaction, /reset, retention, another process
 * — moves the counter and the next read goes to the database.
 */
interface KeptWindow {
  counter: number;
  maxTokens: number;
  /** Oldest first; the entries are frozen (shared with `KeptRows`). */
  messages: StoredMessage[];
  more: boolean;
}

/** A UTF-16 surrogate not part of a pair (SQLite stores it as U+FFFD); linear in the text. */
const LONE_SURROGATE = /\p{Cs}/u;

/** Messages kept in windows at most, over all sessions (the chats in use; the oldest window goes first). */
const KEPT_WINDOW_MESSAGES = 2_000;

class KeptWindows {
  private readonly windows = new Map<string, KeptWindow>();
  private held = 0;

  get(sessionKey: string): KeptWindow | undefined {
    return this.windows.get(sessionKey);
  }

  set(sessionKey: string, window: KeptWindow): void {
    this.delete(sessionKey);
    if (window.messages.length > KEPT_WINDOW_MESSAGES) return;
    for (const [key, oldest] of this.windows) {
      if (this.held + window.messages.length <= KEPT_WINDOW_MESSAGES) break;
      this.windows.delete(key);
      this.held -= oldest.messages.length;
    }
    this.windows.set(sessionKey, window);
    this.held += window.messages.length;
  }

  delete(sessionKey: string): void {
    const window = this.windows.get(sessionKey);
    if (!window) return;
    this.windows.delete(sessionKey);
    this.held -= window.messages.length;
  }
}

/** The newest of `messages` (oldest first) whose tokens add up to at most `maxTokens`, as `newest` reads them. */
function newestWithin(
  messages: readonly StoredMessage[],
  maxTokens: number,
  more: boolean,
): { messages: StoredMessage[]; more: boolean } {
  let total = 0;
  let first = messages.length;
  while (first > 0) {
    total += messages[first - 1]!.tokens;
    if (total > maxTokens) return { messages: messages.slice(first), more: true };
    first--;
  }
  return { messages: messages.slice(), more };
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
  private readonly windows = new KeptWindows();
  private readonly counters: ChangeCounters;
  private newestRows: Statement | undefined;
  private tokenRows: Statement | undefined;

  constructor(private readonly db: Db) {
    this.counters = new ChangeCounters(db);
  }

  /** The session's change counter (migration 037). */
  private counter(sessionKey: string): number {
    return this.counters.get(`messages:${sessionKey}`);
  }

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
    const kept = this.windows.get(sessionKey);
    this.windows.delete(sessionKey);
    let extended: KeptWindow | undefined;
    atomic(this.db, () => {
      // A turn's messages are its last step's record: the step's queued ledger row goes in the same commit.
      flushQueuedWrites(this.db);
      const added: StoredMessage[] = [];
      let exact = kept !== undefined;
      for (const { message, tokens } of messages) {
        if (message.role === "system") continue;
        const row = {
          role: message.role,
          content: message.content ?? null,
          tool_calls:
            message.role === "assistant" && message.tool_calls?.length
              ? JSON.stringify(message.tool_calls)
              : null,
          tool_call_id: message.role === "tool" ? message.tool_call_id : null,
          tokens,
        };
        const { lastInsertRowid } = insert.run(
          sessionKey,
          row.role,
          row.content,
          row.tool_calls,
          row.tool_call_id,
          row.tokens,
          at,
        );
        // The window is extended with the row as a read would return it: text SQLite can't store as given (a lone
        // surrogate becomes U+FFFD) is left to the next read.
        if (!exact) continue;
        if (typeof row.content === "string" && LONE_SURROGATE.test(row.content)) exact = false;
        else added.push(this.read.stored({ id: Number(lastInsertRowid), ...row }));
      }
      prepared(this.db, "UPDATE sessions SET updated_at = ? WHERE key = ?").run(at, sessionKey);
      // Nobody else wrote this session's messages since the window was read: it goes on with these rows.
      if (exact && kept && this.counter(sessionKey) === kept.counter + added.length) {
        const all = [...kept.messages, ...added];
        const window = newestWithin(all, kept.maxTokens, kept.more);
        extended = { counter: kept.counter + added.length, maxTokens: kept.maxTokens, ...window };
      }
    });
    if (extended) this.windows.set(sessionKey, extended);
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
    // Read first: rows read after it are at least this new (a write in between only costs a read next time).
    const counter = this.counter(sessionKey);
    const kept = this.windows.get(sessionKey);
    if (kept?.counter === counter && maxTokens <= kept.maxTokens)
      return newestWithin(kept.messages, maxTokens, kept.more);
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
    messages.reverse();
    this.windows.set(sessionKey, { counter, maxTokens, messages, more });
    return { messages: messages.slice(), more };
  }

  /**
   * True when the session's messages add up to more than `maxTokens` (the compaction check after each turn): read
   * newest first from their ids and token counts alone and stopped there, so no message is built to learn it.
   */
  exceeds(sessionKey: string, maxTokens: number): boolean {
    // The window the turn read, when nothing changed but what it appended: past its budget there is more.
    const kept = this.windows.get(sessionKey);
    if (kept && maxTokens <= kept.maxTokens && kept.counter === this.counter(sessionKey)) {
      if (kept.more) return true;
      let total = 0;
      for (const message of kept.messages) total += message.tokens;
      return total > maxTokens;
    }
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
    atomic(this.db, () => {
      prepared(this.db, "DELETE FROM messages WHERE session_key = ? AND id <= ?").run(sessionKey, throughId);
      this.db
        .prepare("UPDATE sessions SET summary = ?, updated_at = ? WHERE key = ?")
        .run(summary, Date.now(), sessionKey);
    });
  }

  reset(sessionKey: string): void {
    atomic(this.db, () => {
      prepared(this.db, "DELETE FROM messages WHERE session_key = ?").run(sessionKey);
      prepared(this.db, "UPDATE sessions SET summary = NULL WHERE key = ?").run(sessionKey);
    });
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
