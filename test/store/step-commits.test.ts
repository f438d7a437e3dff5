import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { runAgentTurn, type TurnJournal } from "../../src/core/agent-loop.js";
import type { ToolCallContext, ToolRuntime } from "../../src/core/tool-runtime.js";
import type { ChatModel, ToolCall } from "../../src/llm/types.js";
import { openDatabase } from "../../src/store/database.js";
import { StepJournal } from "../../src/store/step-journal.js";
import { TraceRepository, type TraceRow } from "../../src/store/trace.js";

/**
 * Issue 35, cost on the hot path: the journal row of a step and the trace rows of that step are written in one
 * transaction — one WAL commit, not the journal's commit and then the trace rows' own a moment later.
 */
const opened: Array<{ close(): unknown }> = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

function setUp(onError?: (error: unknown) => void) {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "magpie-step-commits-")), "magpie.db");
  const db = openDatabase(file);
  // Another connection, as `magpie trace` in another process: it sees committed rows only.
  const other = new Database(file, { readonly: true });
  opened.push(other, db);
  const trace = new TraceRepository(db, onError);
  const journal = new StepJournal(db);
  const traceRows = other.prepare("SELECT kind FROM trace_events ORDER BY id").pluck();
  const journalRows = other.prepare("SELECT kind FROM turn_steps ORDER BY seq").pluck();
  // data_version moves once per commit made by another connection between two reads.
  const commits = () => Number(other.pragma("data_version", { simple: true }));
  return { db, trace, journal, traceRows, journalRows, commits };
}

const traceRow = (kind: TraceRow["kind"]): TraceRow => ({
  at: Date.now(),
  kind,
  turnId: "inbox:1",
  data: { model: "test-model" },
});

describe("a step's journal row and its trace rows: one transaction", () => {
  it("ATTACK: the LLM step — its trace row is committed with its journal row, in one commit", () => {
    const { trace, journal, traceRows, journalRows, commits } = setUp();
    const before = commits();
    journal.atomically(() => {
      // As the agent loop does: the LLM call's usage and trace row are recorded, then its journal row written.
      trace.record(traceRow("llm"));
      journal.append("inbox:1", {
        kind: "llm",
        message: { role: "assistant", content: null, tool_calls: [] },
        agent: "main",
        model: "test-model",
        at: Date.now(),
      });
    });
    // Before the event loop turns: the trace row did not wait for a commit of its own.
    expect(journalRows.all()).toEqual(["llm"]);
    expect(traceRows.all()).toEqual(["llm"]);
    expect(commits()).toBe(before + 1);
  });

  it("ATTACK: a call's result — the tool's trace row goes with it (as the tool runtime writes it, in its transaction)", async () => {
    const { db, trace, journal, traceRows, journalRows, commits } = setUp();
    journal.append("inbox:1", { kind: "call", callId: "c1", at: Date.now() });
    const before = commits();
    db.transaction(() => {
      trace.record(traceRow("tool"));
      journal.append("inbox:1", { kind: "result", callId: "c1", output: "ok", at: Date.now() });
    })();
    expect(journalRows.all()).toEqual(["call", "result"]);
    expect(traceRows.all()).toEqual(["tool"]);
    expect(commits()).toBe(before + 1);
    // Nothing is left for the queued write: no further commit when the event loop turns.
    await new Promise((resolve) => setImmediate(resolve));
    expect(commits()).toBe(before + 1);
  });

  it("a trace write that fails is reported and does not fail the step's journal row", () => {
    const errors: unknown[] = [];
    const { db, trace, journal, traceRows, journalRows } = setUp((error) => errors.push(error));
    db.exec(
      "CREATE TRIGGER refuse BEFORE INSERT ON trace_events BEGIN SELECT RAISE(ABORT, 'trace refused'); END",
    );
    trace.record(traceRow("tool"));
    journal.append("inbox:1", { kind: "call", callId: "c1", at: Date.now() });
    expect(journalRows.all()).toEqual(["call"]);
    expect(traceRows.all()).toEqual([]);
    expect(String(errors[0])).toContain("trace refused");
  });

  it("without a trace on the connection a step is written as before", () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "magpie-step-commits-")), "magpie.db");
    const db = openDatabase(file);
    opened.push(db);
    const journal = new StepJournal(db);
    journal.append("inbox:1", { kind: "call", callId: "c1", at: 1 });
    expect(journal.steps("inbox:1")).toEqual([{ kind: "call", callId: "c1", at: 1 }]);
  });
});

/**
 * One turn through the agent loop on a real journal: the model asks for `calls` in one step, then answers; `execute`
 * runs each call, told the committed journal rows and the journal's commits so far (a write outside a transaction is
 * a commit of its own).
 */
async function stepTurn(
  calls: Array<{ id: string; name: string; arguments: string }>,
  execute: (
    call: ToolCall,
    context: ToolCallContext,
    committed: () => { rows: unknown[]; commits: number },
  ) => string,
  isReadOnly?: ToolRuntime["isReadOnly"],
) {
  const { db, journal, journalRows } = setUp();
  let commits = 0;
  const counted = <T>(write: () => T): T => {
    if (!db.inTransaction) commits++;
    return write();
  };
  const committed = () => ({ rows: journalRows.all(), commits });
  let answers = 0;
  const model: ChatModel = {
    complete: async () =>
      answers++ === 0
        ? {
            content: null,
            toolCalls: calls.map((call) => ({
              id: call.id,
              type: "function" as const,
              function: { name: call.name, arguments: call.arguments },
            })),
            finishReason: "tool_calls",
          }
        : { content: "done", toolCalls: [], finishReason: "stop" },
  };
  const names = [...new Set(calls.map((call) => call.name))];
  const tools: ToolRuntime = {
    resolveToolSet: () => names,
    specs: () => [],
    ...(isReadOnly ? { isReadOnly } : {}),
    execute: async (call, _allowed, context) => execute(call, context, committed),
  };
  const turnJournal: TurnJournal = {
    steps: [],
    write: (step) => counted(() => journal.append("inbox:1", step)),
    atomically: (write) => counted(() => journal.atomically(write)),
    now: () => Date.now(),
  };
  const outcome = await runAgentTurn(
    { model, tools, logger: { info() {}, warn() {} } as never, maxIterations: 4, llm: { timeoutMs: 1000 } },
    {
      agent: { name: "main", model: "m" } as never,
      systemPrompt: "s",
      history: [],
      userText: "list",
      toolNames: names,
      context: { sessionKey: "s", signal: new AbortController().signal } as unknown as ToolCallContext,
      journal: turnJournal,
    },
  );
  return { outcome, db, journalRows };
}

describe("a tool-call step in the agent loop", () => {
  it("ATTACK: the LLM step and its first call's start are one commit, written before the tool runs", async () => {
    const seen: Array<{ rows: unknown[]; commits: number }> = [];
    const { outcome, db } = await stepTurn(
      [
        { id: "c1", name: "cron_list", arguments: "{}" },
        { id: "c2", name: "cron_list", arguments: '{"all":true}' },
      ],
      (_call, context, committed) => {
        seen.push(committed());
        context.onResult?.("[]");
        return "[]";
      },
    );
    expect(outcome.status).toBe("ok");
    // The first call ran with its LLM step and its own start already committed — together, in one commit.
    expect(seen[0]).toEqual({ rows: ["llm", "call"], commits: 1 });
    // The second call's start is a commit of its own, after the first call's result.
    expect(seen[1]).toEqual({ rows: ["llm", "call", "result", "call"], commits: 3 });
    expect(db.inTransaction).toBe(false);
  });

  it("a read-only call's step is one commit with its result; a side effect's start is on disk before it runs", async () => {
    const seen: Array<{ tool: string; rows: unknown[]; commits: number }> = [];
    const { outcome, db, journalRows } = await stepTurn(
      [
        { id: "c1", name: "cron_list", arguments: "{}" },
        { id: "c2", name: "file_append", arguments: '{"path":"a"}' },
        { id: "c3", name: "file_read", arguments: '{"path":"a"}' },
      ],
      (call, context, committed) => {
        seen.push({ tool: call.function.name, ...committed() });
        // The read-only file_read asks the owner (a guard's warning): its step and start go to disk first.
        if (call.function.name === "file_read") {
          context.approvalSteps?.asked("ap1");
          seen.push({ tool: "asked", ...committed() });
        }
        context.onResult?.("ok");
        return "ok";
      },
      (call) => call.function.name !== "file_append",
    );
    expect(outcome.status).toBe("ok");
    // The read-only call ran with nothing committed yet: its LLM step, start and result are then one commit.
    expect(seen[0]).toEqual({ tool: "cron_list", rows: [], commits: 0 });
    // The side effect's start is on disk (a commit of its own) before it runs, after the first call's one commit.
    expect(seen[1]).toEqual({ tool: "file_append", rows: ["llm", "call", "result", "call"], commits: 2 });
    // A read-only call that journals an approval writes its start first, so the order on disk is what happened.
    expect(seen[3]).toEqual({
      tool: "asked",
      rows: ["llm", "call", "result", "call", "result", "call", "approval"],
      commits: 5,
    });
    expect(journalRows.all()).toEqual([
      "llm",
      "call",
      "result",
      "call",
      "result",
      "call",
      "approval",
      "result",
    ]);
    expect(db.inTransaction).toBe(false);
  });
});
