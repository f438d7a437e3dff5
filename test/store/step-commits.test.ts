import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
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
