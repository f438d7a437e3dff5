import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { LlmUsage, SpendScope } from "../../src/core/spend.js";
import type { Logger } from "../../src/log/logger.js";
import { silentLogger } from "../../src/log/logger.js";
import { Store } from "../../src/store/index.js";
import { SpendGuard } from "../../src/usage/spend-guard.js";
import { summarizeUsage } from "../../src/usage/usage-summary.js";

/**
 * Issue 35, cost on the hot path: an LLM call's ledger row is written in the transaction of the step that made the
 * call — the journal's commit — instead of a commit of its own just before it. What the ledger records is
 * unchanged, and every read of it in this process sees the row at once.
 */
const opened: Array<{ close(): unknown }> = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

function setUp(logger: Logger = silentLogger()) {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-ledger-step-"));
  const store = Store.open(dir);
  // Another connection, as `magpie usage` in another process: it sees committed rows only.
  const other = new Database(path.join(dir, "magpie.db"), { readonly: true });
  opened.push(other, store);
  const guard = new SpendGuard({
    db: store.db,
    settings: { budgets: {}, llm: { prices: { "test-model": { input: 1, output: 2 } } }, timezone: "UTC" },
    logger,
  });
  const ledgerRows = other.prepare(
    "SELECT model, prompt_tokens, completion_tokens, cost_usd, turn_id FROM llm_usage",
  );
  const journalRows = other.prepare("SELECT kind FROM turn_steps ORDER BY seq").pluck();
  const commits = () => Number(other.pragma("data_version", { simple: true }));
  return { store, guard, ledgerRows, journalRows, commits };
}

const scope: SpendScope = {
  origin: "user",
  sessionKey: "telegram:777",
  historyKey: "telegram:777",
  turnId: "inbox:1",
  agent: "main",
};
const usage: LlmUsage = {
  kind: "chat",
  model: "test-model",
  promptTokens: 1000,
  completionTokens: 500,
  estimated: false,
};

const llmStep = () => ({
  kind: "llm" as const,
  message: { role: "assistant" as const, content: null, tool_calls: [] },
  agent: "main",
  model: "test-model",
  at: Date.now(),
});

describe("an LLM call's ledger row goes in its step's journal commit", () => {
  it("ATTACK: the call's ledger row and the step's journal row are one commit", async () => {
    const { store, guard, ledgerRows, journalRows, commits } = setUp();
    const before = commits();
    // As the meter and the agent loop do: the call is recorded when it returns, then its step is journaled.
    expect(guard.record(scope, usage)).toBeCloseTo(0.002);
    // No commit of its own: the row waits for its step's.
    expect(commits()).toBe(before);
    store.journal.append("inbox:1", llmStep());
    expect(journalRows.all()).toEqual(["llm"]);
    expect(ledgerRows.all()).toEqual([
      {
        model: "test-model",
        prompt_tokens: 1000,
        completion_tokens: 500,
        cost_usd: 0.002,
        turn_id: "inbox:1",
      },
    ]);
    expect(commits()).toBe(before + 1);
    // Nothing is left for the queued write: no further commit when the event loop turns.
    await new Promise((resolve) => setImmediate(resolve));
    expect(commits()).toBe(before + 1);
  });

  it("a call with no step after it is written when the event loop turns; reads in this process see it at once", async () => {
    const { store, guard, ledgerRows } = setUp();
    guard.record(scope, usage);
    expect(guard.ledger.spentByTurn("inbox:1")).toEqual({ tokens: 1500, usd: 0.002 });
    guard.record(scope, usage);
    expect(summarizeUsage(store.db, 0, Date.now() + 1000).totals).toEqual(
      expect.objectContaining({ calls: 2, promptTokens: 2000, completionTokens: 1000 }),
    );
    guard.record(scope, usage);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ledgerRows.all()).toHaveLength(3);
  });

  it("a ledger write that fails is logged and does not fail the step's journal row", () => {
    const errors: string[] = [];
    const logger = {
      ...silentLogger(),
      error: (_fields: unknown, message: string) => void errors.push(message),
    };
    const { store, guard, journalRows } = setUp(logger as Logger);
    store.db.exec(
      "CREATE TRIGGER no_usage BEFORE INSERT ON llm_usage BEGIN SELECT RAISE(ABORT, 'disk says no'); END",
    );
    guard.record(scope, usage);
    store.journal.append("inbox:1", llmStep());
    expect(journalRows.all()).toEqual(["llm"]);
    expect(errors).toEqual(["usage-record-failed"]);
  });
});
