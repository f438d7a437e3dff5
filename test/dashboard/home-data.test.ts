import { afterEach, describe, expect, it } from "vitest";
import { failedMessages, humanBytes, spendToday } from "../../src/dashboard/pages/home-data.js";
import { Store } from "../../src/store/index.js";
import { UsageLedger } from "../../src/usage/ledger.js";

let store: Store;
afterEach(() => store?.close());

/** 2026-11-25 10:00 in Berlin (UTC+1). */
const NOW = Date.parse("2026-11-25T09:00:00Z");

function spend(
  ledger: UsageLedger,
  at: string,
  where: { session: string; history?: string; turn?: string; job?: [number, number] },
  tokens: number,
  usd: number | null = null,
): void {
  ledger.insert({
    at: Date.parse(at),
    origin: where.job ? "schedule" : "user",
    sessionKey: where.session,
    historyKey: where.history ?? where.session,
    turnId: where.turn ?? null,
    jobId: where.job?.[0] ?? null,
    runId: where.job?.[1] ?? null,
    taskId: null,
    agent: "main",
    kind: "chat",
    model: "m",
    promptTokens: tokens,
    completionTokens: 0,
    estimated: false,
    costUsd: usd,
  });
}

describe("today's spend on the home page", () => {
  it("counts the local calendar day, and each cap against its fullest chat, job run or turn", () => {
    store = Store.open(":memory:");
    const ledger = new UsageLedger(store.db);
    // 23:30 UTC on the 24th is 00:30 on the 25th in Berlin: today. 22:30 UTC is still the 24th there.
    spend(ledger, "2026-11-24T23:30:00Z", { session: "telegram:1", turn: "t1" }, 100, 0.01);
    spend(ledger, "2026-11-24T22:30:00Z", { session: "telegram:1", turn: "t0" }, 5_000, 1);
    spend(ledger, "2026-11-25T08:00:00Z", { session: "telegram:2", turn: "t2" }, 300, 0.02);
    spend(ledger, "2026-11-25T08:10:00Z", { session: "cron:7:3", turn: "t3", job: [7, 3] }, 250, 0.2);
    const today = spendToday(
      store.db,
      {
        daily: { tokens: 1_000 },
        perChat: { tokens: 400, usd: 0.1 },
        perJobRun: { usd: 0.25 },
        perTurn: { tokens: 500 },
      },
      "Europe/Berlin",
      NOW,
    );
    expect(today.date).toBe("2026-11-25");
    expect(today.total).toMatchObject({ calls: 3, tokens: 650 });
    expect(today.total.usd).toBeCloseTo(0.23);
    const [daily, perChat, perJobRun, perTurn] = today.budgets;
    expect(daily).toMatchObject({ cap: "daily", fraction: 0.65 });
    // The job run's session spent the most USD: 0.2 of 0.1 beats telegram:2's 300 of 400 tokens.
    expect(perChat).toMatchObject({ cap: "perChat", scope: "cron:7:3" });
    expect(perChat!.fraction).toBeCloseTo(2);
    expect(perJobRun).toMatchObject({ cap: "perJobRun", scope: "job #7 run 3" });
    expect(perJobRun!.fraction).toBeCloseTo(0.8);
    expect(perTurn).toMatchObject({ cap: "perTurn", scope: "turn t2", fraction: 0.6 });
  });

  it("with no calls today: zero against each cap, no scope", () => {
    store = Store.open(":memory:");
    const today = spendToday(store.db, { perTurn: { tokens: 10 } }, "UTC", NOW);
    expect(today.total).toEqual({ calls: 0, tokens: 0, usd: 0 });
    expect(today.budgets).toEqual([
      { cap: "perTurn", limit: { tokens: 10 }, spent: { tokens: 0, usd: 0 }, fraction: 0 },
    ]);
  });

  it("failed messages: the newest failed or undeliverable among the last 2,000, a huge text cut to 120 characters", () => {
    store = Store.open(":memory:");
    const receive = (text: string, outcome?: "failed" | "undeliverable" | "answered") => {
      const id = store.inbox.insert(
        {
          channel: "telegram",
          chatId: "1",
          messageId: `${Math.random()}`,
          userId: "1",
          userName: "Owner",
          text,
          isDirect: true,
          mentionsBot: false,
          attachments: [],
          receivedAt: NOW,
        },
        "telegram:1",
      )!;
      if (outcome) store.inbox.setOutcome([id], outcome, outcome === "answered" ? undefined : "llm.down");
      return id;
    };
    const old = receive("too old to show", "failed");
    const huge = receive(`${"x".repeat(5_000_000)}`, "failed");
    const undeliverable = receive("blocked the bot", "undeliverable");
    receive("fine", "answered");
    const insertMany = store.db.transaction(() => {
      for (let index = 0; index < 1_997; index++) receive(`filler ${index}`);
    });
    insertMany();
    const started = performance.now();
    const failed = failedMessages(store.db);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(failed.map((item) => item.id)).toEqual([undeliverable, huge]);
    expect(failed.map((item) => item.id)).not.toContain(old);
    expect(failed[1]).toMatchObject({
      outcome: "failed",
      cause: "llm.down",
      sessionKey: "telegram:1",
      at: NOW,
    });
    expect(failed[1]!.preview).toBe("x".repeat(120));
  });

  it("writes sizes people read", () => {
    expect([512, 812_000, 48_300_000, 1_200_000_000].map(humanBytes)).toEqual([
      "512 B",
      "812 KB",
      "48 MB",
      "1.2 GB",
    ]);
  });
});
