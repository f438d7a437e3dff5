import type { Db } from "./database.js";

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
    const result = this.db
      .prepare(
        `INSERT INTO audit (at, session_key, agent, sender, tool, arguments, verdict, outcome, error_code, duration_ms, result_excerpt)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
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
    const rows = (
      tool
        ? this.db.prepare("SELECT * FROM audit WHERE tool = ? ORDER BY id DESC LIMIT ?").all(tool, limit)
        : this.db.prepare("SELECT * FROM audit ORDER BY id DESC LIMIT ?").all(limit)
    ) as Array<Record<string, unknown>>;
    return rows.map((row) => ({
      id: row.id as number,
      at: row.at as number,
      sessionKey: row.session_key as string | null,
      agent: row.agent as string | null,
      sender: (row.sender as string | null) ?? null,
      tool: row.tool as string,
      arguments: row.arguments as string,
      verdict: row.verdict as AuditEntry["verdict"],
      outcome: row.outcome as AuditEntry["outcome"],
      errorCode: row.error_code as string | null,
      durationMs: row.duration_ms as number,
      resultExcerpt: row.result_excerpt as string | null,
    }));
  }
}
