/**
 * Spend benchmark: what the usage ledger write and the budget check add to a turn. The same turn (history from
 * SQLite, system prompt, one LLM call answered in-process, history written back) runs through the real turn
 * engine with and without the `SpendPort`, interleaved in one run; medians per turn, their difference and
 * ratio. The ledger already holds a busy day (10,000 calls) and all four caps are set, none reached.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ownerIdentity } from "../src/core/identity.js";
import type { SpendPort } from "../src/core/spend.js";
import type { ToolRuntime } from "../src/core/tool-runtime.js";
import { TurnEngine } from "../src/core/turn-engine.js";
import { TurnSlots } from "../src/core/turn-slots.js";
import type { ChatModel } from "../src/llm/types.js";
import { silentLogger } from "../src/log/logger.js";
import { Store } from "../src/store/index.js";
import { SpendGuard } from "../src/usage/spend-guard.js";

const TURNS = Number(process.env.BENCH_SPEND_TURNS ?? 3_000);
const WARMUP = 300;
const PREFILLED_CALLS = 10_000;
const SESSIONS = 50;

const model: ChatModel = {
  complete: async () => ({
    content: "All good.",
    toolCalls: [],
    finishReason: "stop",
    usage: { promptTokens: 812, completionTokens: 64 },
  }),
};
const noTools: ToolRuntime = { resolveToolSet: () => [], specs: () => [], execute: async () => "" };

function engine(store: Store, spend: SpendPort | null): TurnEngine {
  return new TurnEngine({
    store,
    logger: silentLogger(),
    clock: { now: () => Date.now() },
    model,
    tools: noTools,
    hooks: () => [],
    slots: new TurnSlots(4),
    spend: () => spend,
    settings: {
      maxIterations: 10,
      historyTokens: 8_000,
      timezone: "Europe/Berlin",
      llm: { timeoutMs: 60_000 },
      guestToolSet: [],
    },
  });
}

function turn(turnEngine: TurnEngine, index: number) {
  const sessionKey = `telegram:${index % SESSIONS}`;
  return turnEngine.runDetached({
    origin: "user",
    sessionKey,
    agent: { name: "main", model: "gpt-4o-mini", toolSet: "default" },
    sender: ownerIdentity("telegram", "777"),
    target: { channel: "telegram", chatId: String(index % SESSIONS) },
    text: `Question number ${index}: how full is the disk on the NAS today?`,
    channel: "telegram",
    isDirect: true,
    depth: 0,
    canAsk: false,
    signal: new AbortController().signal,
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-bench-spend-"));
  const store = Store.open(dir);
  try {
    const guard = new SpendGuard({
      db: store.db,
      settings: {
        budgets: {
          daily: { tokens: 1e12, usd: 1e9 },
          perChat: { tokens: 1e12 },
          perJobRun: { tokens: 1e12 },
          perTurn: { tokens: 1e12, usd: 1e9 },
        },
        llm: { prices: { "gpt-4o-mini": { input: 0.15, output: 0.6 } } },
        timezone: "Europe/Berlin",
      },
      logger: silentLogger(),
    });
    // A busy day already in the ledger.
    store.db.transaction(() => {
      for (let index = 0; index < PREFILLED_CALLS; index++) {
        const sessionKey = `telegram:${index % SESSIONS}`;
        guard.record(
          { origin: "user", sessionKey, historyKey: sessionKey, turnId: `old-${index}`, agent: "main" },
          { kind: "chat", model: "gpt-4o-mini", promptTokens: 800, completionTokens: 60, estimated: false },
        );
      }
    })();

    const plain = engine(store, null);
    const spending = engine(store, guard);
    for (let index = 0; index < WARMUP; index++) {
      await turn(plain, index);
      await turn(spending, index);
    }
    const without: number[] = [];
    const withSpend: number[] = [];
    for (let index = 0; index < TURNS; index++) {
      // Alternate the order so neither variant always runs on a warmer cache.
      const order = index % 2 === 0 ? [false, true] : [true, false];
      for (const spend of order) {
        const started = performance.now();
        await turn(spend ? spending : plain, index);
        (spend ? withSpend : without).push(performance.now() - started);
      }
    }

    // The port alone: one check and one ledger write, as the loop makes them per LLM call.
    const portOnly: number[] = [];
    for (let index = 0; index < TURNS; index++) {
      const scope = {
        origin: "user" as const,
        sessionKey: `telegram:${index % SESSIONS}`,
        historyKey: `telegram:${index % SESSIONS}`,
        turnId: `port-${index}`,
        agent: "main",
      };
      const started = performance.now();
      guard.beforeCall(scope);
      guard.record(scope, {
        kind: "chat",
        model: "gpt-4o-mini",
        promptTokens: 812,
        completionTokens: 64,
        estimated: false,
      });
      portOnly.push(performance.now() - started);
    }

    const base = median(without);
    const spent = median(withSpend);
    const rows = [
      ["turn without SpendPort", base, percentile(without, 0.95)],
      ["turn with ledger + budgets", spent, percentile(withSpend, 0.95)],
      ["check + ledger write alone", median(portOnly), percentile(portOnly, 0.95)],
    ] as const;
    console.log(
      `${TURNS} turns each, interleaved; ledger pre-filled with ${PREFILLED_CALLS} calls today, 4 caps set.\n`,
    );
    console.log("| measure | median ms | p95 ms |");
    console.log("|---|---:|---:|");
    for (const [name, mid, p95] of rows) console.log(`| ${name} | ${mid.toFixed(3)} | ${p95.toFixed(3)} |`);
    console.log(
      `\nAdded per turn (one LLM call): ${(spent - base).toFixed(3)} ms median (target ≤ 0.5 ms); ratio ${(spent / base).toFixed(2)}× a turn without it.`,
    );
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
