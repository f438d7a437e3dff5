import { z } from "zod";
import { row } from "../lib/row.js";
import type { ChatMessage } from "../llm/types.js";
import type { Db } from "./database.js";
import { prepared } from "./prepared.js";

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

/** Per-session conversation history and its running summary. */
export class HistoryRepository {
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
    const rows = messageRows.each(
      this.db.prepare("SELECT * FROM messages WHERE session_key = ? ORDER BY id DESC").iterate(sessionKey),
    );
    for (const row of rows) {
      total += row.tokens;
      if (total > maxTokens) {
        more = true;
        break;
      }
      messages.push(toStored(row));
    }
    return { messages: messages.reverse(), more };
  }

  /**
   * The oldest messages before `beforeId`, oldest first, up to `maxTokens` (at least one): the part of a long
   * history one compaction summarizes.
   */
  oldest(sessionKey: string, beforeId: number, maxTokens: number): StoredMessage[] {
    const messages: StoredMessage[] = [];
    let total = 0;
    const rows = messageRows.each(
      this.db
        .prepare("SELECT * FROM messages WHERE session_key = ? AND id < ? ORDER BY id")
        .iterate(sessionKey, beforeId),
    );
    for (const row of rows) {
      total += row.tokens;
      if (total > maxTokens && messages.length > 0) break;
      messages.push(toStored(row));
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
