import type { CapName, Period } from "./budget-periods.js";
import type { Spent } from "./ledger.js";

export type CapUnit = keyof Spent;

/** A cap that has been reached: which one, its limit and what was used. */
export interface ReachedCap {
  period: Period;
  unit: CapUnit;
  limit: number;
  used: number;
}

const PER: Record<CapName, string> = {
  daily: "a day",
  perChat: "per chat a day",
  perJobRun: "per job run",
  perTurn: "per turn",
};

const WHERE: Record<CapName, string> = {
  daily: "today",
  perChat: "in this chat today",
  perJobRun: "in this job run",
  perTurn: "in this turn",
};

/** The config key of a cap, as the owner wrote it: `budgets.daily.tokens`. */
export function capKey(reached: Pick<ReachedCap, "period" | "unit">): string {
  return `budgets.${reached.period.cap}.${reached.unit}`;
}

export function formatTokens(tokens: number): string {
  return `${tokens.toLocaleString("en-US")} tokens`;
}

/** Dollars with the precision small amounts need: $12.30, $0.0500, $0.00002. */
export function formatUsd(usd: number): string {
  if (usd === 0 || usd >= 1) return `$${usd.toFixed(2)}`;
  if (usd >= 0.01) return `$${usd.toFixed(4)}`;
  // regex-input-bounded: toFixed(8) of a number below 0.01, ten characters
  return `$${usd.toFixed(8).replace(/0+$/, "")}`;
}

function amount(unit: CapUnit, value: number): string {
  return unit === "tokens" ? formatTokens(value) : formatUsd(value);
}

function duration(ms: number): string {
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  const hours = Math.floor(minutes / 60);
  return hours > 0 ? `${hours} h ${minutes % 60} min` : `${minutes} min`;
}

/** When the cap's period starts again: "at midnight (00:00 Europe/Berlin, in 3 h 12 min)". */
export function resetPhrase(period: Period, now: number, timeZone: string): string {
  switch (period.reset.kind) {
    case "midnight":
      return `at midnight (00:00 ${timeZone}, in ${duration(period.reset.at - now)})`;
    case "next-run":
      return "with the job's next run";
    case "next-message":
      return "with the next message";
  }
}

/** What the turn answers instead of calling the model: the cap, what was used and when it resets. */
export function refusalMessage(reached: ReachedCap, now: number, timeZone: string): string {
  const { period, unit, limit, used } = reached;
  return (
    `Budget reached: ${capKey(reached)} is ${amount(unit, limit)} ${PER[period.cap]}, and ${amount(unit, used)} ` +
    `have been used ${WHERE[period.cap]}. I won't call the model again until it resets ` +
    `${resetPhrase(period, now, timeZone)}. Slash commands still work.`
  );
}

/** The owner's one phone alert for a cap and period. */
export function alertMessage(
  reached: ReachedCap,
  now: number,
  timeZone: string,
): { title: string; message: string } {
  const { period, unit, limit, used } = reached;
  return {
    title: `Magpie: ${capKey(reached)} reached`,
    message:
      `${amount(unit, used)} used ${WHERE[period.cap]} (cap ${amount(unit, limit)} ${PER[period.cap]}). ` +
      `LLM calls it covers are refused until it resets ${resetPhrase(period, now, timeZone)}. ` +
      "Slash commands still work; /usage shows where it went.",
  };
}
