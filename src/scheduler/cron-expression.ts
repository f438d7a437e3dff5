import { createTask, type ScheduledTask, validateDetailed } from "node-cron";
import {
  instantsOf,
  isValidTimeZone,
  naiveMs,
  nextDay,
  offsetAt,
  shiftedOutOfGap,
  type WallTime,
  wallTimeAt,
} from "../lib/zoned-time.js";
import { SchedulerError } from "./scheduler-error.js";

/** A validated cron expression bound to a time zone; computes run times itself so a fake clock drives it. */
export interface CronSchedule {
  expression: string;
  timeZone: string;
  /** The first run strictly after `after` (epoch ms). */
  next(after: number): number;
}

const NICKNAMES: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

/** Why `expression` is not a valid cron expression, or null when it is. */
export function cronProblem(expression: string): string | null {
  const result = validateDetailed(expression);
  if (result.valid) return null;
  const reasons = result.errors
    .map((error) => error.message.replace("is a invalid", "is an invalid"))
    .join("; ");
  return `"${expression}" is not a valid cron expression: ${reasons}. Use 5 fields (minute hour day month weekday, e.g. "0 8 * * *") or 6 with seconds first ("*/30 * * * * *").`;
}

// Day matching (month, day of month, weekday with L/W/# tokens) is node-cron's; a UTC matcher over the
// calendar date keeps it independent of the job's zone. Cached: createTask registers in node-cron's registry.
const dayMatchers = new Map<string, ScheduledTask>();

function dayMatcher(dayFields: string): ScheduledTask {
  let matcher = dayMatchers.get(dayFields);
  if (!matcher) {
    matcher = createTask(`0 0 0 ${dayFields}`, () => undefined, {
      timezone: "UTC",
      name: `magpie-day:${dayFields}`,
    });
    dayMatchers.set(dayFields, matcher);
  }
  return matcher;
}

/** Vixie cron leaves a day field unrestricted when it starts with `*` (so a stepped `*` such as every-other-day counts as unrestricted). */
const unrestricted = (field: string) => field.startsWith("*") || field === "?";

/**
 * Whether a calendar day runs: when both day-of-month and day-of-week are restricted, a day matching
 * **either** runs (`0 9 1 * 1` = the 1st and every Monday), as in a crontab; otherwise both must match.
 */
function dayRule(dayOfMonth: string, month: string, dayOfWeek: string): (wall: WallTime) => boolean {
  const dateOf = (wall: WallTime) => new Date(Date.UTC(wall.year, wall.month - 1, wall.day));
  if (unrestricted(dayOfMonth) || unrestricted(dayOfWeek)) {
    const matcher = dayMatcher(`${dayOfMonth} ${month} ${dayOfWeek}`);
    return (wall) => matcher.match(dateOf(wall));
  }
  const byDate = dayMatcher(`${dayOfMonth} ${month} *`);
  const byWeekday = dayMatcher(`* ${month} ${dayOfWeek}`);
  return (wall) => byDate.match(dateOf(wall)) || byWeekday.match(dateOf(wall));
}

/** Validates and compiles `expression` for `timeZone`; throws SchedulerError naming the problem. */
export function compileCron(expression: string, timeZone: string): CronSchedule {
  const problem = cronProblem(expression);
  if (problem) throw new SchedulerError("cron.invalid_expression", problem);
  if (!isValidTimeZone(timeZone)) {
    throw new SchedulerError(
      "cron.invalid_timezone",
      `Unknown time zone "${timeZone}" — use an IANA name like Europe/Berlin or UTC.`,
    );
  }
  const result = validateDetailed(expression);
  const fields = result.fields!;
  const resolved = NICKNAMES[expression.trim().toLowerCase()] ?? expression;
  const raw = resolved.trim().split(/\s+/);
  const six = raw.length === 5 ? ["0", ...raw] : raw;
  const dayMatches = dayRule(six[3]!, six[4]!, six[5]!);
  const seconds = [...fields.second].sort((a, b) => a - b);
  const minutes = [...fields.minute].sort((a, b) => a - b);
  const hours = [...fields.hour].sort((a, b) => a - b);
  // A job that runs in every hour is interval-like: it follows real time through DST (both passes of a
  // repeated hour). A job pinned to hours runs once per wall-clock time: a time skipped by spring-forward
  // runs shifted by the gap, a time repeated by fall-back runs at its first occurrence only.
  const everyHour = hours.length === 24;

  const candidatesFor = (wall: WallTime): number[] => {
    const instants = instantsOf(wall, timeZone);
    if (everyHour) return instants;
    if (instants.length === 0) return [shiftedOutOfGap(wall, timeZone)];
    return [instants[0]!];
  };

  const next = (after: number): number => {
    const start = wallTimeAt(after, timeZone);
    let day: WallTime = { ...start, hour: 0, minute: 0, second: 0 };
    for (let index = 0; index < 366 * 8; index++) {
      if (dayMatches(day)) {
        // Every instant of this day lies within [naive − maxOffset, naive − minOffset]; bounds let the
        // loop skip wall times that can't be after `after` or can't beat the best found.
        const dayStart = naiveMs(day);
        const offsets = [dayStart - 86_400_000, dayStart + 43_200_000, dayStart + 2 * 86_400_000].map((at) =>
          offsetAt(at, timeZone),
        );
        const minOffset = Math.min(...offsets);
        const maxOffset = Math.max(...offsets);
        let best = Number.POSITIVE_INFINITY;
        for (const hour of hours) {
          for (const minute of minutes) {
            for (const second of seconds) {
              const wall = { ...day, hour, minute, second };
              const naive = naiveMs(wall);
              if (naive - minOffset <= after) continue;
              if (naive - maxOffset > best) break;
              for (const candidate of candidatesFor(wall)) {
                if (candidate > after && candidate < best) best = candidate;
              }
            }
          }
        }
        if (best !== Number.POSITIVE_INFINITY) return best;
      }
      day = nextDay(day);
    }
    throw new SchedulerError("cron.never_runs", `"${expression}" never matches a date in the next 8 years.`);
  };

  return { expression, timeZone, next };
}
