import type { Statement } from "better-sqlite3";
import { z } from "zod";
import { parseJson } from "../lib/parse-json.js";
import { row } from "../lib/row.js";
import type { ChatMessage, ToolCall } from "../llm/types.js";
import { partOfTransaction } from "./atomic.js";
import type { Db } from "./database.js";
import { flushQueuedWrites } from "./queued-writes.js";
import { flushQueuedTrace } from "./trace.js";

/**
 * One journaled step of a turn (DESIGN.md → Durable turns):
 * - `llm`: the LLM's answer asking for tool calls, with the agent and model that gave it;
 * - `call`: a call about to run (a `call` without its `result` was running when the process died);
 * - `result`: what a call returned to the model;
 * - `approval`: an approval asked for a call (its id), and once decided, the decision.
 */
export type JournalStep =
  | { kind: "llm"; message: AssistantStep; agent: string; model: string; at: number }
  | { kind: "call"; callId: string; at: number }
  | { kind: "result"; callId: string; output: string; at: number }
  | { kind: "approval"; callId: string; approvalId: string; decision?: ApprovalStepDecision; at: number };

export type AssistantStep = Extract<ChatMessage, { role: "assistant" }>;
export type ApprovalStepDecision = "approved" | "denied" | "timeout";

const toolCallSchema: z.ZodType<ToolCall> = z.object({
  id: z.string(),
  type: z.literal("function"),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

const llmBody = z.object({
  message: z.object({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z.array(toolCallSchema).optional(),
  }),
  agent: z.string(),
  model: z.string(),
});

const approvalBody = z.object({
  approvalId: z.string(),
  decision: z.enum(["approved", "denied", "timeout"]).optional(),
});

const stepRows = row(
  z.object({
    kind: z.enum(["llm", "call", "result", "approval"]),
    call_id: z.string().nullable(),
    body: z.string(),
    at: z.number(),
  }),
  "turn_steps",
);

const oldestRows = row(z.object({ at: z.number().nullable() }), "turn_steps oldest");

/**
 * The step journal (DESIGN.md → Durable turns), keyed by the turn's journal id (`inbox:<first message>` for a
 * chat turn, stable across restarts). Each step is one row written before the next step starts; the rows go in
 * the same transaction as the turn's reply.
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

  /**
   * Writes a step with the trace rows and the queued writes (its LLM call's ledger row) so far, its own step's among
   * them, in one transaction — or as part of the one already open (the tool call's, with its audit row): a failed
   * step fails that whole transaction, so it needs no savepoint of its own.
   */
  append(turnId: string, step: JournalStep): void {
    partOfTransaction(this.db, () => {
      this.insert.run(
        turnId,
        turnId,
        step.kind,
        step.kind === "llm" ? null : step.callId,
        bodyOf(step),
        step.at,
      );
      flushQueuedTrace(this.db);
      flushQueuedWrites(this.db);
    });
  }

  /** Runs `write` in one transaction (a step with the trace and ledger rows of the same step). */
  atomically<T>(write: () => T): T {
    return partOfTransaction(this.db, () => {
      const result = write();
      flushQueuedTrace(this.db);
      flushQueuedWrites(this.db);
      return result;
    });
  }

  steps(turnId: string): JournalStep[] {
    return stepRows.all(this.select.all(turnId)).map((stored): JournalStep => {
      if (stored.kind === "llm")
        return { kind: "llm", ...parseJson(stored.body, llmBody, "turn_steps llm body"), at: stored.at };
      const callId = stored.call_id ?? "";
      if (stored.kind === "call") return { kind: "call", callId, at: stored.at };
      if (stored.kind === "result") return { kind: "result", callId, output: stored.body, at: stored.at };
      const body = parseJson(stored.body, approvalBody, "turn_steps approval body");
      return {
        kind: "approval",
        callId,
        approvalId: body.approvalId,
        ...(body.decision ? { decision: body.decision } : {}),
        at: stored.at,
      };
    });
  }

  /** When the turn's first step was written, or null when it has none. */
  startedAt(turnId: string): number | null {
    return oldestRows.only(this.oldest.get(turnId)).at;
  }

  /** Ends a turn's journal (in the transaction of its reply): the last step's queued ledger row goes with it. */
  clear(turnId: string): void {
    this.remove.run(turnId);
    flushQueuedWrites(this.db);
  }
}

function bodyOf(step: JournalStep): string {
  switch (step.kind) {
    case "llm":
      return JSON.stringify({ message: step.message, agent: step.agent, model: step.model });
    case "call":
      return "";
    case "result":
      return step.output;
    case "approval":
      return JSON.stringify({
        approvalId: step.approvalId,
        ...(step.decision ? { decision: step.decision } : {}),
      });
  }
}

/**
 * What a journal says was done, for the "interrupted" notice of a turn that cannot resume: each tool call that
 * completed, and each that was running (its outcome unknown). Empty when no tool call had started.
 */
export function describeDoneSteps(steps: readonly JournalStep[]): string[] {
  const names = new Map<string, string>();
  const finished = new Set<string>();
  const started: string[] = [];
  for (const step of steps) {
    if (step.kind === "llm")
      for (const call of step.message.tool_calls ?? []) names.set(call.id, call.function.name);
    else if (step.kind === "call") started.push(step.callId);
    else if (step.kind === "result") finished.add(step.callId);
  }
  return started.map((callId) => {
    const name = names.get(callId) ?? "a tool";
    return finished.has(callId) ? `${name} (done)` : `${name} (was running; whether it finished is unknown)`;
  });
}
