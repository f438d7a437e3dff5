import type { Clock } from "../core/clock.js";
import type { SlashCommand } from "../core/commands.js";
import type { Db } from "../store/index.js";
import { dayAt, monthStartAt, weekStartAt } from "./calendar.js";
import { summarizeUsage } from "./usage-summary.js";
import { usageText } from "./usage-text.js";

export const USAGE_PERIODS = ["today", "week", "month"] as const;
export type UsagePeriod = (typeof USAGE_PERIODS)[number];

export const PERIOD_LABELS: Record<UsagePeriod, string> = {
  today: "today",
  week: "this week",
  month: "this month",
};

/** Where a named period starts: today's midnight, Monday 00:00, the 1st 00:00 — in `timeZone`. */
export function periodStart(period: UsagePeriod, now: number, timeZone: string): number {
  if (period === "today") return dayAt(now, timeZone).start;
  return period === "week" ? weekStartAt(now, timeZone) : monthStartAt(now, timeZone);
}

/** `/usage [today|week|month]`: what the LLM calls cost, by model and by origin. Owner-only (central list). */
export function usageCommand(db: Db, timeZone: string, clock: Clock): SlashCommand {
  return {
    name: "usage",
    description: "LLM usage and cost, by model and by origin",
    usage: "/usage [today|week|month]",
    ownerOnly: true,
    run(context) {
      const period = (context.args.toLowerCase() || "today") as UsagePeriod;
      if (!USAGE_PERIODS.includes(period)) return "Usage: /usage [today|week|month]";
      const now = clock.now();
      return usageText(
        summarizeUsage(db, periodStart(period, now, timeZone), now + 1),
        PERIOD_LABELS[period],
        timeZone,
      );
    },
  };
}
