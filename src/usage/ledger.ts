import type Database from "better-sqlite3";
import { z } from "zod";
import type { LlmCallKind } from "../core/spend.js";
import { row } from "../lib/row.js";
import type { Db } from "../store/index.js";
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
    this.insertRow.run({
      ...entry,
      promptTokens: Math.max(0, Math.round(entry.promptTokens)),
      completionTokens: Math.max(0, Math.round(entry.completionTokens)),
      estimated: entry.estimated ? 1 : 0,
    });
  }

  /** Everything in [start, end). */
  spentBetween(start: number, end: number): Spent {
    return spentRows.only(this.sinceStatement.get(start, end));
  }

  /** One chat session's calls in [start, end). */
  spentBySession(sessionKey: string, start: number, end: number): Spent {
    return spentRows.only(this.sessionStatement.get(sessionKey, start, end));
  }

  /** One scheduled job run, with what it delegated or spawned. */
  spentByJobRun(jobId: number, runId: number): Spent {
    return spentRows.only(this.jobRunStatement.get(jobId, runId));
  }

  spentByTurn(turnId: string): Spent {
    return spentRows.only(this.turnStatement.get(turnId));
  }
}
