import type { MagpieConfig } from "../config/schema.js";
import { dayAt, type Span } from "./calendar.js";
import type { Spent, UsageLedger } from "./ledger.js";
import type { OriginIds } from "./origin-keys.js";

export type Budgets = MagpieConfig["budgets"];
export type CapName = keyof Budgets;
export interface Cap {
  tokens?: number;
  usd?: number;
}

/** When a period's spending starts again from zero. */
export type Reset = { kind: "midnight"; at: number } | { kind: "next-run" } | { kind: "next-message" };

/** One cap's current period for a call: its key (cache, alert mark), how to sum it, when it resets. */
export interface Period {
  cap: CapName;
  limit: Cap;
  key: string;
  load(): Spent;
  reset: Reset;
}

/** What a call is counted against. */
export interface CallKeys extends OriginIds {
  sessionKey: string;
  turnId: string | null;
}

/** The checked order: the widest cap first, so the message names the one the owner set for everything. */
const ORDER: CapName[] = ["daily", "perChat", "perJobRun", "perTurn"];

/** The periods of the configured caps that a call at `now` counts against. */
export function periodsOf(
  budgets: Budgets,
  keys: CallKeys,
  day: Span & { date: string },
  ledger: UsageLedger,
): Period[] {
  const periods: Period[] = [];
  for (const cap of ORDER) {
    const limit = budgets[cap];
    if (!limit) continue;
    const midnight: Reset = { kind: "midnight", at: day.end };
    switch (cap) {
      case "daily":
        periods.push({
          cap,
          limit,
          key: `daily:${day.date}`,
          load: () => ledger.spentBetween(day.start, day.end),
          reset: midnight,
        });
        break;
      case "perChat":
        periods.push({
          cap,
          limit,
          key: `perChat:${keys.sessionKey}:${day.date}`,
          load: () => ledger.spentBySession(keys.sessionKey, day.start, day.end),
          reset: midnight,
        });
        break;
      case "perJobRun": {
        const { jobId, runId } = keys;
        if (jobId === null || runId === null) break;
        periods.push({
          cap,
          limit,
          key: `perJobRun:${jobId}:${runId}`,
          load: () => ledger.spentByJobRun(jobId, runId),
          reset: { kind: "next-run" },
        });
        break;
      }
      case "perTurn": {
        const { turnId } = keys;
        if (turnId === null) break;
        periods.push({
          cap,
          limit,
          key: `perTurn:${turnId}`,
          load: () => ledger.spentByTurn(turnId),
          reset: { kind: "next-message" },
        });
        break;
      }
    }
  }
  return periods;
}

/** The local day containing `now`, reused while `now` stays inside it (no time-zone math on most calls). */
export class DayCache {
  private current: (Span & { date: string }) | null = null;

  constructor(private readonly timeZone: string) {}

  at(now: number): Span & { date: string } {
    if (!this.current || now < this.current.start || now >= this.current.end) {
      this.current = dayAt(now, this.timeZone);
    }
    return this.current;
  }
}
