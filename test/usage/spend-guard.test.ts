import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LlmUsage, SpendScope } from "../../src/core/spend.js";
import { silentLogger } from "../../src/log/logger.js";
import { Store } from "../../src/store/index.js";
import { flushQueuedWrites } from "../../src/store/queued-writes.js";
import type { Budgets } from "../../src/usage/budget-periods.js";
import { SpendGuard } from "../../src/usage/spend-guard.js";
import { summarizeUsage } from "../../src/usage/usage-summary.js";
import { usageText } from "../../src/usage/usage-text.js";

/** 2024-03-09 22:00 UTC — 23:00 in Berlin, an hour before its midnight. */
const START = Date.UTC(2024, 2, 9, 22, 0, 0);

const stores: Store[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
});

function setup(
  budgets: Budgets,
  options: { prices?: Record<string, { input: number; output: number }>; store?: Store } = {},
) {
  const store = options.store ?? Store.open(":memory:");
  stores.push(store);
  const clock = {
    time: START,
    now() {
      return this.time;
    },
  };
  const alerts: Array<{ title: string; message: string }> = [];
  const guard = new SpendGuard({
    db: store.db,
    settings: { budgets, llm: { prices: options.prices ?? {} }, timezone: "Europe/Berlin" },
    logger: silentLogger(),
    clock,
    alert: async (alert) => void alerts.push(alert),
  });
  return { store, clock, alerts, guard };
}

const chat = (turnId: string, sessionKey = "telegram:777"): SpendScope => ({
  origin: "user",
  sessionKey,
  historyKey: sessionKey,
  turnId,
  agent: "main",
});
const job = (jobId: number, runId: number, turnId: string): SpendScope => ({
  origin: "schedule",
  sessionKey: `cron:${jobId}:${runId}`,
  historyKey: `cron:${jobId}:${runId}`,
  turnId,
  agent: "main",
});
const used = (promptTokens: number, completionTokens: number, estimated = false): LlmUsage => ({
  kind: "chat",
  model: "test-model",
  promptTokens,
  completionTokens,
  estimated,
});

/** Calls `guard` like the agent loop: check, then record, until refused; returns the number of calls made. */
function callUntilRefused(guard: SpendGuard, scope: () => SpendScope, usage: LlmUsage, max = 20) {
  for (let calls = 0; calls < max; calls++) {
    const decision = guard.beforeCall(scope());
    if (!decision.allowed) return { calls, message: decision.message };
    guard.record(scope(), usage);
  }
  throw new Error("never refused");
}

describe("SpendGuard: hard budgets before every call", () => {
  it("a daily token cap lets exactly the calls before it through, names the cap and the reset, alerts once", () => {
    const { guard, alerts } = setup({ daily: { tokens: 50 } });
    let turn = 0;
    // 20 tokens a call: 0, 20, 40 are under 50 → three calls; at 60 the fourth is refused.
    const outcome = callUntilRefused(guard, () => chat(`t${++turn}`), used(15, 5));
    expect(outcome.calls).toBe(3);
    expect(outcome.message).toContain("budgets.daily.tokens");
    expect(outcome.message).toContain("50 tokens a day");
    expect(outcome.message).toContain("60 tokens have been used today");
    expect(outcome.message).toContain("at midnight (00:00 Europe/Berlin, in 1 h 0 min)");
    // Another chat, a job: the daily cap covers everything.
    expect(guard.beforeCall(chat("other", "discord:1")).allowed).toBe(false);
    expect(guard.beforeCall(job(1, 1, "run")).allowed).toBe(false);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.title).toBe("Magpie: budgets.daily.tokens reached");
  });

  it("resets at midnight in the configured time zone, and the new day alerts again", () => {
    const { guard, clock, alerts } = setup({ daily: { tokens: 10 } });
    guard.record(chat("a"), used(10, 0));
    expect(guard.beforeCall(chat("b")).allowed).toBe(false);
    clock.time = START + 59 * 60_000; // 23:59 Berlin
    expect(guard.beforeCall(chat("c")).allowed).toBe(false);
    clock.time = START + 60 * 60_000; // 00:00 Berlin (23:00 UTC: still the 9th in UTC)
    expect(guard.beforeCall(chat("d")).allowed).toBe(true);
    guard.record(chat("d"), used(10, 0));
    expect(guard.beforeCall(chat("e")).allowed).toBe(false);
    expect(alerts).toHaveLength(2);
  });

  it("the alert mark survives a restart: one alert per cap and period", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-spend-"));
    try {
      const first = setup({ daily: { tokens: 10 } }, { store: Store.open(dir) });
      first.guard.record(chat("a"), used(10, 0));
      expect(first.guard.beforeCall(chat("b")).allowed).toBe(false);
      expect(first.alerts).toHaveLength(1);
      first.store.close();
      const second = setup({ daily: { tokens: 10 } }, { store: Store.open(dir) });
      expect(second.guard.beforeCall(chat("c")).allowed).toBe(false);
      expect(second.alerts).toHaveLength(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("perChat counts one session today; other chats go on", () => {
    const { guard } = setup({ perChat: { tokens: 30 } });
    const outcome = callUntilRefused(guard, () => chat("x", "telegram:1"), used(10, 10));
    expect(outcome.calls).toBe(2);
    expect(outcome.message).toContain("budgets.perChat.tokens");
    expect(outcome.message).toContain("in this chat today");
    expect(guard.beforeCall(chat("y", "telegram:2")).allowed).toBe(true);
  });

  it("perJobRun counts one run, with what it delegated or spawned; the next run starts from zero", () => {
    const { guard } = setup({ perJobRun: { tokens: 40 } });
    guard.record(job(3, 1, "a"), used(20, 0));
    // A delegation inside the run keeps the run's session key under a history key of its own.
    guard.record(
      {
        origin: "delegate",
        sessionKey: "cron:3:1",
        historyKey: "delegate:cron:3:1:x",
        turnId: "b",
        agent: "helper",
      },
      used(20, 0),
    );
    const refused = guard.beforeCall(job(3, 1, "c"));
    expect(refused).toMatchObject({ allowed: false });
    expect(!refused.allowed && refused.message).toContain("budgets.perJobRun.tokens");
    expect(!refused.allowed && refused.message).toContain("with the job's next run");
    expect(guard.beforeCall(job(3, 2, "d")).allowed).toBe(true);
    // A chat is not a job run: perJobRun doesn't apply to it.
    guard.record(chat("e"), used(100, 0));
    expect(guard.beforeCall(chat("f")).allowed).toBe(true);
  });

  it("perTurn counts one turn; the next message starts again", () => {
    const { guard } = setup({ perTurn: { tokens: 25 } });
    const outcome = callUntilRefused(guard, () => chat("one"), used(10, 0));
    expect(outcome.calls).toBe(3);
    expect(outcome.message).toContain("budgets.perTurn.tokens");
    expect(outcome.message).toContain("with the next message");
    expect(guard.beforeCall(chat("two")).allowed).toBe(true);
  });

  it("USD caps count the priced cost; unpriced models cost nothing against them", () => {
    const prices = { "test-model": { input: 1000, output: 2000 } };
    const { guard, store } = setup({ daily: { usd: 0.05 } }, { prices });
    // 10 in × $1000/M + 10 out × $2000/M = $0.03 a call: $0, $0.03 under $0.05; at $0.06 refused.
    const outcome = callUntilRefused(guard, () => chat("t"), used(10, 10));
    expect(outcome.calls).toBe(2);
    expect(outcome.message).toContain("budgets.daily.usd is $0.0500 a day, and $0.0600 have been used today");
    guard.record(chat("t"), { ...used(1000, 1000), model: "unpriced-model" });
    // A reader of the table by hand in this process writes the queued rows first (as the ledger's reads do).
    flushQueuedWrites(store.db);
    const rows = store.db.prepare("SELECT model, cost_usd FROM llm_usage ORDER BY id").all();
    expect(rows).toEqual([
      { model: "test-model", cost_usd: 0.03 },
      { model: "test-model", cost_usd: 0.03 },
      { model: "unpriced-model", cost_usd: null },
    ]);
  });

  it("with no budgets every call is allowed and still recorded", () => {
    const { guard, store } = setup({});
    for (let index = 0; index < 5; index++) {
      expect(guard.beforeCall(chat("t")).allowed).toBe(true);
      guard.record(chat("t"), used(100, 100));
    }
    // A reader of the table by hand in this process writes the queued rows first (as the ledger's reads do).
    flushQueuedWrites(store.db);
    expect(store.db.prepare("SELECT COUNT(*) FROM llm_usage").pluck().get()).toBe(5);
  });
});

describe("the ledger and its summary", () => {
  it("keeps origin, keys, job and task ids, agent, model, kind, tokens, estimate mark and cost", () => {
    const { guard, store } = setup({}, { prices: { "test-model": { input: 1, output: 1 } } });
    guard.record(job(4, 9, "turn-a"), used(7, 3));
    guard.record(
      {
        origin: "spawn",
        sessionKey: "telegram:777",
        historyKey: "spawn:abc123",
        turnId: "turn-b",
        agent: "researcher",
      },
      used(5, 5, true),
    );
    guard.record(
      { origin: "memory", sessionKey: "memory", historyKey: "memory", turnId: null, agent: null },
      {
        kind: "embedding",
        model: "embed-model",
        promptTokens: 12,
        completionTokens: 0,
        estimated: false,
      },
    );
    flushQueuedWrites(store.db);
    const rows = store.db
      .prepare(
        "SELECT origin, session_key, history_key, turn_id, job_id, run_id, task_id, agent, kind, model, prompt_tokens, completion_tokens, estimated, cost_usd FROM llm_usage ORDER BY id",
      )
      .all();
    expect(rows).toEqual([
      {
        origin: "schedule",
        session_key: "cron:4:9",
        history_key: "cron:4:9",
        turn_id: "turn-a",
        job_id: 4,
        run_id: 9,
        task_id: null,
        agent: "main",
        kind: "chat",
        model: "test-model",
        prompt_tokens: 7,
        completion_tokens: 3,
        estimated: 0,
        cost_usd: 0.00001,
      },
      {
        origin: "spawn",
        session_key: "telegram:777",
        history_key: "spawn:abc123",
        turn_id: "turn-b",
        job_id: null,
        run_id: null,
        task_id: "abc123",
        agent: "researcher",
        kind: "chat",
        model: "test-model",
        prompt_tokens: 5,
        completion_tokens: 5,
        estimated: 1,
        cost_usd: 0.00001,
      },
      {
        origin: "memory",
        session_key: "memory",
        history_key: "memory",
        turn_id: null,
        job_id: null,
        run_id: null,
        task_id: null,
        agent: null,
        kind: "embedding",
        model: "embed-model",
        prompt_tokens: 12,
        completion_tokens: 0,
        estimated: 0,
        cost_usd: null,
      },
    ]);

    const summary = summarizeUsage(store.db, START, START + 1);
    expect(summary.totals).toEqual({
      calls: 3,
      promptTokens: 24,
      completionTokens: 8,
      tokens: 32,
      costUsd: 0.00002,
      estimatedCalls: 1,
      unpricedCalls: 1,
    });
    expect(summary.byOrigin.map((origin) => [origin.key, origin.kind, origin.tokens])).toEqual([
      ["memory", "memory", 12],
      ["job:4", "job", 10],
      ["telegram:777", "chat", 10],
    ]);
    const text = usageText(summary, "today", "Europe/Berlin");
    expect(text).toContain("Usage today (since 2024-03-09 23:00 Europe/Berlin): 3 calls, ~32 tokens");
    expect(text).toMatch(/• telegram:777: 1 call, ~10 tokens .*1 estimated/);
    expect(text).toContain("• job 4: 1 call, 10 tokens (7 in, 3 out), $0.00001");
    expect(text).toContain("• memory (embeddings): 1 call, 12 tokens");
    expect(text).toContain("~ includes estimates");
  });
});
