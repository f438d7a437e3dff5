import { SchedulerError } from "./scheduler-error.js";

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** A real delay is a few characters; longer text would only make the unit search slow. */
const MAX_DELAY_CHARS = 64;

/** Parses a one-shot delay (`30s`, `30m`, `2h`, `1d`, or combined like `1h30m`) into milliseconds. */
export function parseDelay(delay: string): number {
  const text = delay.trim().toLowerCase();
  if (text.length > MAX_DELAY_CHARS)
    throw new SchedulerError(
      "cron.invalid_delay",
      `"${delay.slice(0, 40)}…" is too long for a delay (write 30s, 2h, 1d).`,
    );
  // regex-input-bounded: at most MAX_DELAY_CHARS, checked above
  const parts = [...text.matchAll(/(\d+)\s*([smhd])/g)];
  const consumed = parts.map((part) => part[0]).join("");
  if (parts.length === 0 || consumed.replace(/\s/g, "") !== text.replace(/\s/g, "")) {
    throw new SchedulerError(
      "cron.invalid_delay",
      `"${delay}" is not a delay — write a number and a unit: 30s, 30m, 2h, 1d (or 1h30m).`,
    );
  }
  const total = parts.reduce((sum, part) => sum + Number(part[1]) * UNIT_MS[part[2]!]!, 0);
  if (total <= 0)
    throw new SchedulerError("cron.invalid_delay", `"${delay}" is zero — give a delay of at least 1s.`);
  return total;
}

/** Parses an ISO time (`2026-05-01T08:00:00Z`, or local to the job's zone without an offset) that lies ahead. */
export function parseAt(at: string, now: number, toInstant: (wallIso: string) => number | null): number {
  const trimmed = at.trim();
  const hasZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(trimmed);
  const instant = hasZone ? Date.parse(trimmed) : toInstant(trimmed);
  if (instant === null || Number.isNaN(instant)) {
    throw new SchedulerError(
      "cron.invalid_at",
      `"${at}" is not an ISO time — write e.g. 2026-05-01T08:00 (job's time zone) or 2026-05-01T06:00:00Z.`,
    );
  }
  if (instant <= now) {
    throw new SchedulerError(
      "cron.at_in_past",
      `"${at}" is in the past (now is ${new Date(now).toISOString()}) — give a future time or use delay.`,
    );
  }
  return instant;
}
