import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { retentionFeature, retentionTargets } from "../../src/app/retention-feature.js";
import { retentionSchema } from "../../src/config/sections/retention.js";
import { Store } from "../../src/store/index.js";
import { pruneOnce } from "../../src/store/retention.js";
import { UsageLedger } from "../../src/usage/ledger.js";
import { summarizeUsage } from "../../src/usage/usage-summary.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 15, 12);
const clock = { now: () => NOW };

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

/** Rows of every pruned kind, at `daysAgo`, finished or not. */
function seed(store: Store, daysAgo: number, tag: string): void {
  const at = NOW - daysAgo * DAY;
  const db = store.db;
  const inbox = db.prepare(
    "INSERT INTO inbox (channel, message_id, session_key, payload, status, received_at) VALUES ('t', ?, 's', '{}', ?, ?)",
  );
  const outbox = db.prepare(
    "INSERT INTO outbox (channel, chat_id, payload, status, next_attempt_at, created_at, inbox_id) VALUES ('t', 'c', '{}', ?, ?, ?, ?)",
  );
  for (const status of ["pending", "processing", "done", "interrupted", "failed"]) {
    inbox.run(`${tag}-${status}`, status, at);
  }
  const answered = inbox.run(`${tag}-answered-later`, "done", at).lastInsertRowid;
  for (const status of ["pending", "sent", "failed"]) outbox.run(status, at, at, null);
  outbox.run("pending", at, at, answered); // a reply still waiting keeps its inbox row
  db.prepare(
    "INSERT INTO audit (at, tool, arguments, verdict, outcome, duration_ms) VALUES (?, 'shell', '{}', 'allow', 'ok', 1)",
  ).run(at);
  db.prepare(
    "INSERT OR IGNORE INTO sessions (key, agent, created_at, updated_at) VALUES ('s', 'main', ?, ?)",
  ).run(at, at);
  db.prepare(
    "INSERT INTO messages (session_key, role, content, tokens, created_at) VALUES ('s', 'user', ?, 1, ?)",
  ).run(tag, at);
  const ledger = new UsageLedger(db);
  for (const [model, cost] of [
    ["gpt-a", 0.5],
    ["gpt-a", 0.25],
    ["gpt-b", null],
  ] as const) {
    ledger.insert({
      at,
      origin: "user",
      sessionKey: "telegram:1",
      historyKey: "telegram:1",
      turnId: null,
      agent: "main",
      kind: "chat",
      model,
      promptTokens: 100,
      completionTokens: 10,
      estimated: model === "gpt-b",
      costUsd: cost,
      jobId: null,
      runId: null,
      taskId: null,
    });
  }
}

const count = (store: Store, sql: string) => store.db.prepare(sql).pluck().get() as number;

describe("retention", () => {
  it("prunes finished rows past their days, never unfinished ones, and keeps the usage totals", async () => {
    const store = Store.open(":memory:");
    seed(store, 200, "old");
    seed(store, 45, "mid");
    seed(store, 0, "new");
    const everything = summarizeUsage(store.db, 0, NOW + 1);
    const retention = retentionSchema.parse({});
    // Each outbox row has the three failover records a phone copy and a failover leave (kv, by outbox id).
    const failoverKeys: string[] = [];
    for (const id of store.db.prepare("SELECT id FROM outbox").pluck().all() as number[])
      failoverKeys.push(`failover:${id}`, `failover:copy:${id}`, `failover:also:${id}`);
    for (const key of [...failoverKeys, "failoverish:1", "failover"]) store.kv.set(key, { at: NOW });
    const report = await pruneOnce(retentionTargets(store.db, retention, "Europe/Berlin", clock), NOW);

    // inbox: 30 days; old and mid lose done/interrupted/failed, keep pending/processing and the one with a pending reply.
    expect(count(store, "SELECT count(*) FROM inbox WHERE message_id LIKE 'old-%'")).toBe(3);
    expect(
      store.db
        .prepare("SELECT message_id FROM inbox WHERE message_id LIKE 'mid-%' ORDER BY id")
        .pluck()
        .all(),
    ).toEqual(["mid-pending", "mid-processing", "mid-answered-later"]);
    expect(count(store, "SELECT count(*) FROM inbox WHERE message_id LIKE 'new-%'")).toBe(6);
    // outbox: 30 days, pending stays.
    expect(count(store, "SELECT count(*) FROM outbox WHERE status = 'pending'")).toBe(6);
    expect(count(store, "SELECT count(*) FROM outbox WHERE status != 'pending'")).toBe(2);
    // audit: 90 days.
    expect(count(store, "SELECT count(*) FROM audit")).toBe(2);
    // messages: null keeps them.
    expect(count(store, "SELECT count(*) FROM messages")).toBe(3);
    // usage: detail rows past 90 days become daily totals; the summary is unchanged.
    expect(count(store, "SELECT count(*) FROM llm_usage")).toBe(6);
    expect(count(store, "SELECT count(*) FROM llm_usage_daily")).toBe(2);
    expect(summarizeUsage(store.db, 0, NOW + 1)).toEqual(everything);
    expect(report.deleted).toEqual({ auditDays: 1 + 3, inboxDays: 6, outboxDays: 4 });
    expect(report.more).toBe(false);
    // The failover records of the pruned outbox rows went with them; those of the kept ones and other keys stay.
    const kvKeys = store.db.prepare("SELECT key FROM kv ORDER BY key").pluck().all() as string[];
    const keptOutbox = new Set(store.db.prepare("SELECT id FROM outbox").pluck().all() as number[]);
    expect(kvKeys.filter((key) => key.startsWith("failover:"))).toEqual(
      failoverKeys.filter((key) => keptOutbox.has(Number(key.split(":").at(-1)))).sort(),
    );
    expect(kvKeys.filter((key) => key.startsWith("failover:")).length).toBe(8 * 3);
    expect(kvKeys).toContain("failoverish:1");
    expect(kvKeys).toContain("failover");

    // messagesDays set: history goes too; a second run moves nothing twice.
    const again = await pruneOnce(
      retentionTargets(store.db, { ...retention, messagesDays: 7 }, "Europe/Berlin", clock),
      NOW,
    );
    expect(again.deleted).toEqual({ auditDays: 0, inboxDays: 0, outboxDays: 0, messagesDays: 2 });
    expect(summarizeUsage(store.db, 0, NOW + 1)).toEqual(everything);
    store.close();
  });

  it("never rolls up today's ledger rows (the daily budgets sum them), even on a 25-hour day", async () => {
    const store = Store.open(":memory:");
    // Berlin falls back on 2026-10-25: the local day runs from 22:00Z on the 24th for 25 hours.
    const now = Date.UTC(2026, 9, 25, 22, 45); // 23:45 CET
    const spentAt = Date.UTC(2026, 9, 24, 22, 30); // 00:30 CEST the same day, 24 h 15 min ago
    seed(store, (NOW - spentAt) / DAY, "today");
    const retention = retentionSchema.parse({ auditDays: 1 });
    await pruneOnce(retentionTargets(store.db, retention, "Europe/Berlin", { now: () => now }), now);
    expect(count(store, "SELECT count(*) FROM llm_usage")).toBe(3);
    expect(count(store, "SELECT count(*) FROM audit")).toBe(0);
    store.close();
  });

  it("does bounded work per run and says when rows are left for the next one", async () => {
    const store = Store.open(":memory:");
    for (let index = 0; index < 30; index++) seed(store, 100, `old${index}`);
    const targets = retentionTargets(store.db, retentionSchema.parse({}), "UTC", clock);
    const first = await pruneOnce(targets, NOW, { batchSize: 7, maxRowsPerRun: 20 });
    expect(first.more).toBe(true);
    expect(first.deleted.inboxDays).toBe(20);
    const second = await pruneOnce(targets, NOW, { batchSize: 7, maxRowsPerRun: 1000 });
    expect(second.more).toBe(false);
    expect(first.deleted.inboxDays! + second.deleted.inboxDays!).toBe(90);
    store.close();
  });

  it("rejects 0 days and unknown keys; null keeps forever", () => {
    expect(retentionSchema.safeParse({ auditDays: 0 }).success).toBe(false);
    expect(retentionSchema.safeParse({ auditdays: 5 }).success).toBe(false);
    expect(retentionSchema.parse({ inboxDays: null })).toEqual({
      auditDays: 90,
      inboxDays: null,
      outboxDays: 30,
      messagesDays: null,
    });
  });

  it("the app prunes at start-up", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-retention-"));
    const store = Store.open(dataDir);
    const realNow = Date.now();
    store.db
      .prepare(
        "INSERT INTO audit (at, tool, arguments, verdict, outcome, duration_ms) VALUES (?, 'shell', '{}', 'allow', 'ok', 1)",
      )
      .run(realNow - 100 * DAY);
    store.close();
    harness = await startTestApp({ llm: false, dataDir, features: [retentionFeature] });
    const deadline = Date.now() + 5_000;
    while (count(harness.app.store, "SELECT count(*) FROM audit") > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(count(harness.app.store, "SELECT count(*) FROM audit")).toBe(0);
  });
});
