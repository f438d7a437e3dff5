import type { Statement } from "better-sqlite3";
import type { ChatMessage } from "../llm/types.js";
import type { Db } from "./database.js";

/**
 * One journaled step of a turn: the LLM's answer asking for tool calls (`llm`), a call about to run (`call`),
 * a call's result (`result`).
 */
export type JournalStep =
  | { kind: "llm"; message: ChatMessage; at: number }
  | { kind: "call"; callId: string; at: number }
  | { kind: "result"; callId: string; output: string; at: number };

interface StepRow {
  kind: string;
  call_id: string | null;
  body: string;
  at: number;
}

/**
 * The step journal (DESIGN.md → Durable turns), keyed by the turn's id (`inbox:<first message>` for a chat turn,
 * stable across restarts). Each step is one row written before the next step starts; the rows go in the same
 * transaction as the turn's reply.
 */
export class StepJournal {
  private readonly insert: Statement;
  private readonly select: Statement;
  private readonly remove: Statement;
  private readonly oldest: Statement;

  constructor(private readonly db: Db) {
    this.insert = db.prepare(
      `INSERT INTO turn_steps (turn_id, seq, kind, call_id, body, at)
       VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM turn_steps WHERE turn_id = ?), ?, ?, ?, ?)`,
    );
    this.select = db.prepare("SELECT kind, call_id, body, at FROM turn_steps WHERE turn_id = ? ORDER BY seq");
    this.remove = db.prepare("DELETE FROM turn_steps WHERE turn_id = ?");
    this.oldest = db.prepare("SELECT MIN(at) AS at FROM turn_steps WHERE turn_id = ?");
  }

  append(turnId: string, step: JournalStep): void {
    const callId = step.kind === "llm" ? null : step.callId;
    const body =
      step.kind === "llm" ? JSON.stringify(step.message) : step.kind === "result" ? step.output : "";
    this.insert.run(turnId, turnId, step.kind, callId, body, step.at);
  }

  steps(turnId: string): JournalStep[] {
    return (this.select.all(turnId) as StepRow[]).flatMap((row): JournalStep[] => {
      if (row.kind === "llm") return [{ kind: "llm", message: JSON.parse(row.body) as ChatMessage, at: row.at }];
      if (row.kind === "call" && row.call_id) return [{ kind: "call", callId: row.call_id, at: row.at }];
      if (row.kind === "result" && row.call_id)
        return [{ kind: "result", callId: row.call_id, output: row.body, at: row.at }];
      return [];
    });
  }

  /** When the turn's first step was written, or null when it has none. */
  startedAt(turnId: string): number | null {
    return (this.oldest.get(turnId) as { at: number | null } | undefined)?.at ?? null;
  }

  clear(turnId: string): void {
    this.remove.run(turnId);
  }
}
