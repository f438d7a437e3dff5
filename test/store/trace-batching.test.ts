import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/database.js";
import { TraceRepository, type TraceRow } from "../../src/store/trace.js";

/**
 * Trace rows on the way from a message to its LLM request (access, receipt, turn start) are written together, in
 * one transaction after the code that recorded them has run — not one WAL commit each (issue 35, hot path).
 */
const opened: Array<{ close(): unknown }> = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

function databases(): { db: ReturnType<typeof openDatabase>; other: Database.Database } {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "magpie-trace-batch-")), "magpie.db");
  const db = openDatabase(file);
  // Another connection, as `magpie trace` in another process: it sees committed rows only.
  const other = new Database(file, { readonly: true });
  opened.push(other, db);
  return { db, other };
}

const row = (kind: TraceRow["kind"], inboxId: number | null = 1): TraceRow => ({
  at: Date.now(),
  kind,
  inboxId,
  turnId: "inbox:1",
  data: { n: 1 },
});
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("trace rows are written in one transaction per turn of the event loop", () => {
  it("ATTACK: a turn's start (access, received, turn_started) is one commit, after the recording code ran", async () => {
    const { db, other } = databases();
    const trace = new TraceRepository(db);
    const count = other.prepare("SELECT COUNT(*) FROM trace_events").pluck();
    const commits = () => Number(other.pragma("data_version", { simple: true }));
    const before = commits();
    trace.record(row("access", null));
    trace.record(row("received"));
    trace.record(row("turn_started"));
    // Nothing committed yet: no WAL commit on the way to the LLM request.
    expect(count.get()).toBe(0);
    await nextTurn();
    expect(count.get()).toBe(3);
    // data_version moves once per commit made by another connection between two reads: once here.
    expect(commits()).toBe(before + 1);
  });

  it("a row that closes something writes at once, with the rows queued before it; reads see queued rows", () => {
    const { db, other } = databases();
    const trace = new TraceRepository(db);
    const count = other.prepare("SELECT COUNT(*) FROM trace_events").pluck();
    trace.record(row("received"));
    trace.record(row("turn_started"));
    trace.recordNow(row("outcome"));
    expect(count.get()).toBe(3);
    // A reader on the same connection (the dashboard's trace page) flushes what any repository queued.
    trace.record(row("llm", null));
    expect(new TraceRepository(db).rowsOfTurns(["inbox:1"]).map((entry) => entry.kind)).toEqual([
      "received",
      "turn_started",
      "outcome",
      "llm",
    ]);
  });

  it("a queued write that fails is reported to onError, not thrown from the event loop", async () => {
    const { db } = databases();
    const errors: unknown[] = [];
    const trace = new TraceRepository(db, (error) => errors.push(error));
    db.exec("DROP TABLE trace_events");
    db.exec("CREATE TABLE trace_events (id INTEGER PRIMARY KEY, at INTEGER NOT NULL CHECK (at < 0))");
    trace.record(row("received"));
    await nextTurn();
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toMatch(/trace_events|no column|CHECK/i);
  });
});
