import { z } from "zod";
import { row } from "../lib/row.js";
import type { Db } from "./database.js";
import { prepared } from "./prepared.js";

const auditRows = row(
  z.object({
    id: z.number(),
    at: z.number(),
    session_key: z.string().nullable(),
    agent: z.string().nullable(),
    sender: z.string().nullable(),
    tool: z.string(),
    arguments: z.string(),
    verdict: z.enum(["allow", "warn", "deny", "approved", "denied-by-user", "timeout"]),
    outcome: z.enum(["ok", "error", "denied"]),
    error_code: z.string().nullable(),
    duration_ms: z.number(),
    result_excerpt: z.string().nullable(),
  }),
  "audit",
);

export interface AuditEntry {
  sessionKey?: string;
  agent?: string;
  /** Whose authority the call ran under: `<channel>:<userId> (<role>)`. */
  sender?: string;
  tool: string;
  /** Already redacted JSON. */
  arguments: string;
  verdict: "allow" | "warn" | "deny" | "approved" | "denied-by-user" | "timeout";
  outcome: "ok" | "error" | "denied";
  errorCode?: string;
  durationMs: number;
  resultExcerpt?: string;
  at?: number;
}

export interface AuditRecord
  extends Required<Omit<AuditEntry, "errorCode" | "resultExcerpt" | "sessionKey" | "agent" | "sender">> {
  id: number;
  sessionKey: string | null;
  agent: string | null;
  sender: string | null;
  errorCode: string | null;
  resultExcerpt: string | null;
}

/** Every tool call, with redacted arguments, verdict and outcome. */
export class AuditRepository {
  constructor(private readonly db: Db) {}

  record(entry: AuditEntry): number {
    const result = prepared(
      this.db,
      `INSERT INTO audit (at, session_key, agent, sender, tool, arguments, verdict, outcome, error_code, duration_ms, result_excerpt)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      entry.at ?? Date.now(),
      entry.sessionKey ?? null,
      entry.agent ?? null,
      entry.sender ?? null,
      entry.tool,
      entry.arguments,
      entry.verdict,
      entry.outcome,
      entry.errorCode ?? null,
      Math.round(entry.durationMs),
      entry.resultExcerpt ?? null,
    );
    return Number(result.lastInsertRowid);
  }

  recent(limit = 50, tool?: string): AuditRecord[] {
    const rows = auditRows.all(
      tool
        ? prepared(this.db, "SELECT * FROM audit WHERE tool = ? ORDER BY id DESC LIMIT ?").all(tool, limit)
        : prepared(this.db, "SELECT * FROM audit ORDER BY id DESC LIMIT ?").all(limit),
    );
    return rows.map((row) => ({
      id: row.id,
      at: row.at,
      sessionKey: row.session_key,
      agent: row.agent,
      sender: row.sender ?? null,
      tool: row.tool,
      arguments: row.arguments,
      verdict: row.verdict,
      outcome: row.outcome,
      errorCode: row.error_code,
      durationMs: row.duration_ms,
      resultExcerpt: row.result_excerpt,
    }));
  }
}
