import { Cron } from "croner";
import { describe, expect, it } from "vitest";
import { compileCron } from "../../src/scheduler/cron-expression.js";

/**
 * Magpie's cron against an independent implementation (croner): the next runs of a few hundred expressions ×
 * time zones × start instants, DST days included, must agree.
 *
 * Where Magpie deliberately differs, it is listed here and checked to be only that:
 * - Vixie cron treats a day-of-month or day-of-week field that *starts with* `*` (`*`, `*\/4`) as unrestricted:
 *   the two combine with OR only when neither starts with `*`. croner's legacy mode applies OR to `*\/4` too, so the
 *   oracle runs in legacy (OR) mode exactly when Vixie would, and in AND mode otherwise.
 * - DST policy: a time skipped by a spring-forward runs once, shifted by the gap (02:30 → 03:30); croner runs it
 *   at the end of the gap (03:00). A time in the repeated hour of a fall-back runs once (as in Vixie cron);
 *   croner runs it again in the second pass. Such runs are counted apart and must all sit at a DST switch.
 */

const ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata"];
/** Ordinary days and the DST switch days of the zones above. */
const STARTS = [
  "2026-01-15T10:17:00Z",
  "2026-03-08T06:30:00Z", // New York spring forward
  "2026-03-29T00:30:00Z", // Berlin spring forward
  "2026-04-05T15:00:00Z", // Sydney fall back
  "2026-10-25T00:30:00Z", // Berlin fall back
  "2026-11-01T05:30:00Z", // New York fall back
  "2026-02-27T23:59:00Z",
].map((iso) => Date.parse(iso));

/** The zone's UTC offset in minutes at an instant. */
function offsetMinutes(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
  }).formatToParts(instant);
  const get = (type: string) => Number(parts.find((part) => part.type === type)?.value);
  const wall = Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"));
  return Math.round((wall - Math.floor(instant / 60_000) * 60_000) / 60_000);
}

function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** Random but realistic expressions: lists, ranges, steps and stars in every field. */
function expressions(count: number): string[] {
  const next = random(42);
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)]!;
  const field = (min: number, max: number, star = 0.4) => {
    const roll = next();
    if (roll < star) return pick(["*", `*/${2 + Math.floor(next() * 4)}`]);
    const a = min + Math.floor(next() * (max - min + 1));
    if (roll < star + 0.25) return String(a);
    const b = Math.min(max, a + 1 + Math.floor(next() * 5));
    if (roll < star + 0.45) return `${a}-${b}`;
    return `${a},${b}`;
  };
  const out: string[] = ["0 9 1 * 1", "30 2 * * *", "0 0 29 2 *", "*/15 * * * 1-5", "0 12 13 * 5"];
  while (out.length < count) {
    out.push(
      `${field(0, 59, 0.2)} ${field(0, 23)} ${field(1, 28, 0.6)} ${field(1, 12, 0.7)} ${field(0, 6, 0.6)}`,
    );
  }
  return out;
}

describe("cron expressions agree with croner (an independent crontab implementation)", () => {
  it("next-run sequences for 120 expressions × 5 time zones × 7 start instants (3 runs each)", () => {
    const disagreements: string[] = [];
    let compared = 0;
    let inDstGap = 0;
    let inRepeatedHour = 0;
    for (const expression of expressions(120)) {
      for (const timeZone of ZONES) {
        const magpie = compileCron(expression, timeZone);
        const [, , dom = "*", , dow = "*"] = expression.split(" ");
        const vixieOr = !dom.startsWith("*") && !dow.startsWith("*");
        const oracle = new Cron(expression, { timezone: timeZone, legacyMode: vixieOr, paused: true });
        for (const start of STARTS) {
          let ours = start;
          let theirs = new Date(start);
          for (let step = 0; step < 3; step++) {
            ours = magpie.next(ours);
            const next = oracle.nextRun(theirs);
            if (!next) break;
            theirs = next;
            compared++;
            if (ours !== next.getTime()) {
              // A run in a spring-forward gap: Magpie shifts it by the gap, croner runs it when the gap ends.
              const gap =
                offsetMinutes(next.getTime(), timeZone) - offsetMinutes(next.getTime() - 3_600_000, timeZone);
              if (gap > 0 && ours - next.getTime() <= gap * 60_000 && ours > next.getTime()) {
                inDstGap++;
                break;
              }
              // The repeated hour of a fall-back: Magpie (like Vixie cron) runs it once, croner twice.
              if (gap < 0 && ours > next.getTime()) {
                inRepeatedHour++;
                break;
              }
              disagreements.push(
                `${expression} @ ${timeZone} from ${new Date(start).toISOString()} step ${step}: magpie ${new Date(ours).toISOString()}, croner ${next.toISOString()}`,
              );
              break;
            }
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(10_000);
    // Only spring-forward days produce these, and only for expressions whose hour falls in the gap.
    expect(inDstGap + inRepeatedHour).toBeLessThan(compared / 50);
    expect(disagreements.slice(0, 10)).toEqual([]);
    // 12,600 comparisons against croner: a correctness check, given time on a busy two-core runner.
  }, 90_000);
});
