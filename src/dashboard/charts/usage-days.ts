import type { Db } from "../../store/index.js";
import { summarizeUsage } from "../../usage/usage-summary.js";
import type { ChartDay } from "./days.js";
import type { DailySeries } from "./stacked-bars.js";

/** The usage ledger per local day: tokens and cost by model, the biggest models named and the rest summed. */
export interface UsageByDay {
  days: readonly ChartDay[];
  tokens: DailySeries[];
  /** USD by model (priced calls only); empty when no call in the days had a price. */
  cost: DailySeries[];
  totalTokens: number;
  /** null when no call had a price. */
  totalCostUsd: number | null;
  unpricedCalls: number;
}

/** Models shown by name; the rest are "other models". */
const NAMED_MODELS = 5;

/**
 * Reads the ledger (recent rows and the daily roll-ups, through `summarizeUsage`, so the chart and `/usage`
 * always agree) once per day.
 */
export function usageByDay(db: Db, days: readonly ChartDay[]): UsageByDay {
  const perModel = new Map<string, { tokens: number[]; cost: number[]; total: number }>();
  let totalCostUsd: number | null = null;
  let unpricedCalls = 0;
  days.forEach((day, index) => {
    const summary = summarizeUsage(db, day.start, day.end);
    unpricedCalls += summary.totals.unpricedCalls;
    if (summary.totals.costUsd !== null) totalCostUsd = (totalCostUsd ?? 0) + summary.totals.costUsd;
    for (const model of summary.byModel) {
      let entry = perModel.get(model.model);
      if (!entry) {
        entry = { tokens: days.map(() => 0), cost: days.map(() => 0), total: 0 };
        perModel.set(model.model, entry);
      }
      entry.tokens[index]! += model.tokens;
      entry.cost[index]! += model.costUsd ?? 0;
      entry.total += model.tokens;
    }
  });
  const ranked = [...perModel.entries()].sort(
    ([nameA, a], [nameB, b]) => b.total - a.total || nameA.localeCompare(nameB),
  );
  const named = ranked.length > NAMED_MODELS ? ranked.slice(0, NAMED_MODELS - 1) : ranked;
  const rest = ranked.slice(named.length);
  const series = (pick: "tokens" | "cost"): DailySeries[] => {
    const list = named.map(([name, entry]) => ({ name, values: entry[pick] }));
    if (rest.length > 0) {
      list.push({
        name: `${rest.length} other models`,
        values: days.map((_, index) => rest.reduce((sum, [, entry]) => sum + entry[pick][index]!, 0)),
      });
    }
    return list;
  };
  return {
    days,
    tokens: series("tokens"),
    cost: totalCostUsd === null ? [] : series("cost"),
    totalTokens: ranked.reduce((sum, [, entry]) => sum + entry.total, 0),
    totalCostUsd,
    unpricedCalls,
  };
}
