import type Database from "better-sqlite3";
import { z } from "zod";
import type { LlmCallKind } from "../core/spend.js";
import { row } from "../lib/row.js";
import type { Db } from "../store/index.js";
import { flushQueuedWrites, queueWrite } from "../store/queued-writes.js";
import type { OriginIds } from "./origin-keys.js";

const spentRows = row(z.object({ tokens: z.number(), usd: z.number() }), "llm_usage spend");

/** One LLM request as the ledger keeps it. */
export interface UsageEntry extends OriginIds {
  at: number;
  /** What started it: user, schedule, spawn, delegate, event — or `memory` for embeddings. */
  origin: string;
  sessionKey: string;
  historyKey: string;
  turnId: string | null;
  agent: string | null;
  kind: LlmCallKind;
  model: string;
  promptTokens: number;
  completionTokens: number;
  estimated: boolean;
  costUsd: number | null;
}

/** Tokens (prompt + completion) and USD (priced calls only) spent within some scope. */
export interface Spent {
  tokens: number;
  usd: number;
}

const SPENT =
  "COALESCE(SUM(prompt_tokens + completion_tokens), 0) AS tokens, COALESCE(SUM(cost_usd), 0) AS usd";

/** The `llm_usage` table: one row per LLM request, and the sums the budgets are checked against. */
export class UsageLedger {
  private readonly insertRow: Database.Statement;
  private readonly sinceStatement: Database.Statement;
  private readonly sessionStatement: Database.Statement;
  private readonly jobRunStatement: Database.Statement;
  private readonly turnStatement: Database.Statement;

  constructor(readonly db: Db) {
    this.insertRow = db.prepare(
      `INSERT INTO llm_usage (at, origin, session_key, history_key, turn_id, job_id, run_id, task_id, agent, kind,
         model, prompt_tokens, completion_tokens, estimated, cost_usd)
       VALUES (@at, @origin, @sessionKey, @historyKey, @turnId, @jobId, @runId, @taskId, @agent, @kind,
         @model, @promptTokens, @completionTokens, @estimated, @costUsd)`,
    );
    this.sinceStatement = db.prepare(`SELECT ${SPENT} FROM llm_usage WHERE at >= ? AND at < ?`);
    this.sessionStatement = db.prepare(
      `SELECT ${SPENT} FROM llm_usage WHERE session_key = ? AND at >= ? AND at < ?`,
    );
    this.jobRunStatement = db.prepare(`SELECT ${SPENT} FROM llm_usage WHERE job_id = ? AND run_id = ?`);
    this.turnStatement = db.prepare(`SELECT ${SPENT} FROM llm_usage WHERE turn_id = ?`);
  }

  insert(entry: UsageEntry): void {
    this.insertRow.run(columnsOf(entry));
  }

  /**
   * Queues the row (`queueWrite`): it is written in the transaction of the step that made the call — the journal
   * flushes it with the step's row — or on the next turn of the event loop; a read through this ledger, the usage
   * summary or closing the store writes it first. `onError` is told when the write fails.
   */
  queue(entry: UsageEntry, onError: (error: unknown) => void): void {
    const columns = columnsOf(entry);
    queueWrite(this.db, () => this.insertRow.run(columns), onError);
  }

  /** Everything in [start, end). */
  spentBetween(start: number, end: number): Spent {
    flushQueuedWrites(this.db);
    return spentRows.only(this.sinceStatement.get(start, end));
  }

  /** One chat session's calls in [start, end). */
  spentBySession(sessionKey: string, start: number, end: number): Spent {
    flushQueuedWrites(this.db);
    return spentRows.only(this.sessionStatement.get(sessionKey, start, end));
  }

  /** One scheduled job run, with what it delegated or spawned. */
  spentByJobRun(jobId: number, runId: number): Spent {
    flushQueuedWrites(this.db);
    return spentRows.only(this.jobRunStatement.get(jobId, runId));
  }

  spentByTurn(turnId: string): Spent {
    flushQueuedWrites(this.db);
    return spentRows.only(this.turnStatement.get(turnId));
  }
}

function columnsOf(entry: UsageEntry): Record<string, unknown> {
  return {
    ...entry,
    promptTokens: Math.max(0, Math.round(entry.promptTokens)),
    completionTokens: Math.max(0, Math.round(entry.completionTokens)),
    estimated: entry.estimated ? 1 : 0,
  };
}
