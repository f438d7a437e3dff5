import { describe, expect, it } from "vitest";
import { compileCron, cronProblem } from "../../src/scheduler/cron-expression.js";

const iso = (instant: number) => new Date(instant).toISOString();

function runs(expression: string, timeZone: string, from: number, count: number): string[] {
  const schedule = compileCron(expression, timeZone);
  const out: string[] = [];
  let at = from;
  for (let index = 0; index < count; index++) {
    at = schedule.next(at);
    out.push(iso(at));
  }
  return out;
}

describe("cron expressions", () => {
  it("rejects invalid expressions with the reason", () => {
    expect(cronProblem("61 * * * *")).toMatch(/61 is an invalid expression for minute/);
    expect(cronProblem("* * *")).toMatch(/expected 5 or 6 fields but got 3/);
    expect(cronProblem("0 8 * * *")).toBeNull();
    expect(() => compileCron("0 8 * * *", "Mars/Base")).toThrow(/Unknown time zone "Mars\/Base"/);
  });

  it("supports an optional seconds field and nicknames", () => {
    expect(runs("*/20 * * * * *", "UTC", Date.UTC(2026, 0, 1, 10, 0, 5), 3)).toEqual([
      "2026-01-01T10:00:20.000Z",
      "2026-01-01T10:00:40.000Z",
      "2026-01-01T10:01:00.000Z",
    ]);
    expect(runs("@daily", "UTC", Date.UTC(2026, 0, 1, 10), 1)).toEqual(["2026-01-02T00:00:00.000Z"]);
  });

  it("runs in the job's time zone", () => {
    // 09:00 New York on weekdays; 2026-01-02 is a Friday.
    expect(runs("0 9 * * 1-5", "America/New_York", Date.UTC(2026, 0, 2, 15), 2)).toEqual([
      "2026-01-05T14:00:00.000Z",
      "2026-01-06T14:00:00.000Z",
    ]);
  });

  it("runs a 02:30 Berlin job once on the spring-forward day (shifted to 03:30 CEST)", () => {
    expect(runs("30 2 * * *", "Europe/Berlin", Date.UTC(2026, 2, 27, 12), 3)).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:30:00.000Z", // 02:30 does not exist; 03:30 CEST
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
    ]);
  });

  it("runs a 02:30 Berlin job once on the fall-back day (first occurrence)", () => {
    expect(runs("30 2 * * *", "Europe/Berlin", Date.UTC(2026, 9, 24, 12), 2)).toEqual([
      "2026-10-25T00:30:00.000Z", // 02:30 CEST; 02:30 CET (01:30Z) is skipped
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  it("keeps interval jobs on real time through the repeated hour", () => {
    expect(runs("0,30 * * * *", "Europe/Berlin", Date.UTC(2026, 9, 24, 23, 45), 6)).toEqual([
      "2026-10-25T00:00:00.000Z", // 02:00 CEST
      "2026-10-25T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T01:00:00.000Z", // 02:00 CET
      "2026-10-25T01:30:00.000Z", // 02:30 CET
      "2026-10-25T02:00:00.000Z",
      "2026-10-25T02:30:00.000Z",
    ]);
  });

  it("handles last-day-of-month tokens through node-cron's day matching", () => {
    expect(runs("0 12 L * *", "UTC", Date.UTC(2026, 1, 3), 2)).toEqual([
      "2026-02-28T12:00:00.000Z",
      "2026-03-31T12:00:00.000Z",
    ]);
  });

  it("computes next runs fast enough for every-second schedules", () => {
    const started = performance.now();
    expect(runs("* * * * * *", "Europe/Berlin", Date.UTC(2026, 0, 1, 23, 59, 58), 300)).toHaveLength(300);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe("day-of-month and day-of-week (Vixie cron)", () => {
  it("runs `0 9 1 * 1` on the 1st and on every Monday", () => {
    // 2026-01-01 is a Thursday; 2026-02-01 a Sunday.
    expect(runs("0 9 1 * 1", "UTC", Date.UTC(2025, 11, 31), 7)).toEqual([
      "2026-01-01T09:00:00.000Z",
      "2026-01-05T09:00:00.000Z",
      "2026-01-12T09:00:00.000Z",
      "2026-01-19T09:00:00.000Z",
      "2026-01-26T09:00:00.000Z",
      "2026-02-01T09:00:00.000Z",
      "2026-02-02T09:00:00.000Z",
    ]);
  });

  it("keeps AND when either day field starts with `*` (as Vixie does for `*/2`)", () => {
    // Odd days that are Mondays: 2026-01-05, 2026-01-19, 2026-02-09 …
    expect(runs("0 0 */2 * 1", "UTC", Date.UTC(2026, 0, 1), 3)).toEqual([
      "2026-01-05T00:00:00.000Z",
      "2026-01-19T00:00:00.000Z",
      "2026-02-09T00:00:00.000Z",
    ]);
    expect(runs("0 0 13 * *", "UTC", Date.UTC(2026, 0, 1), 2)).toEqual([
      "2026-01-13T00:00:00.000Z",
      "2026-02-13T00:00:00.000Z",
    ]);
  });

  it("agrees with an independent crontab matcher on a few hundred random expressions and fixed-offset zones", () => {
    const random = seeded(15);
    const zones: Array<[string, number]> = [
      ["UTC", 0],
      ["Asia/Kolkata", 330],
      ["America/Sao_Paulo", -180],
      ["Asia/Tokyo", 540],
    ];
    const starts = [Date.UTC(2026, 0, 1, 0, 0), Date.UTC(2026, 1, 27, 13, 7), Date.UTC(2027, 11, 31, 23, 59)];
    let compared = 0;
    for (let index = 0; index < 300; index++) {
      const expression = [
        randomField(random, 0, 59),
        randomField(random, 0, 23),
        randomField(random, 1, 31),
        randomField(random, 1, 12),
        randomField(random, 0, 6),
      ].join(" ");
      const [zone, offsetMinutes] = zones[index % zones.length]!;
      const from = starts[index % starts.length]!;
      const expected = oracleRuns(expression, offsetMinutes, from, 4);
      expect(runs(expression, zone, from, expected.length), `${expression} in ${zone}`).toEqual(expected);
      compared++;
    }
    expect(compared).toBe(300);
  });
});

/** A small deterministic PRNG so a failure reproduces. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

function randomField(random: () => number, low: number, high: number): string {
  const pick = () => low + Math.floor(random() * (high - low + 1));
  const roll = random();
  if (roll < 0.35) return "*";
  if (roll < 0.55) return String(pick());
  if (roll < 0.7) return `*/${2 + Math.floor(random() * 5)}`;
  if (roll < 0.85) {
    const [a, b] = [pick(), pick()].sort((x, y) => x - y);
    return `${a}-${b}`;
  }
  return [...new Set([pick(), pick(), pick()])].join(",");
}

/** An independent reading of a 5-field crontab line (numbers, ranges, steps, lists), Vixie day rule. */
function oracleField(field: string, low: number, high: number): Set<number> {
  const values = new Set<number>();
  for (const part of field.split(",")) {
    const [range, stepText] = part.split("/");
    const step = stepText ? Number(stepText) : 1;
    let [from, to] = [low, high];
    if (range !== "*") {
      const [a, b] = range!.split("-").map(Number);
      from = a!;
      to = b ?? a!;
    }
    for (let value = from; value <= to; value += step) values.add(value);
  }
  return values;
}

function oracleRuns(expression: string, offsetMinutes: number, from: number, count: number): string[] {
  const [minute, hour, dom, month, dow] = expression.split(" ") as [string, string, string, string, string];
  const minutes = oracleField(minute, 0, 59);
  const hours = oracleField(hour, 0, 23);
  const days = oracleField(dom, 1, 31);
  const months = oracleField(month, 1, 12);
  const weekdays = oracleField(dow, 0, 6);
  const both = !dom.startsWith("*") && !dow.startsWith("*");
  const out: string[] = [];
  const offset = offsetMinutes * 60_000;
  // Walk local days; within a day, local minutes in order.
  const startLocal = new Date(from + offset);
  let day = Date.UTC(startLocal.getUTCFullYear(), startLocal.getUTCMonth(), startLocal.getUTCDate());
  for (let dayIndex = 0; dayIndex < 366 * 9 && out.length < count; dayIndex++, day += 86_400_000) {
    const date = new Date(day);
    if (!months.has(date.getUTCMonth() + 1)) continue;
    const byDate = days.has(date.getUTCDate());
    const byWeekday = weekdays.has(date.getUTCDay());
    if (!(both ? byDate || byWeekday : byDate && byWeekday)) continue;
    for (const h of [...hours].sort((a, b) => a - b)) {
      for (const m of [...minutes].sort((a, b) => a - b)) {
        const instant = day + (h * 60 + m) * 60_000 - offset;
        if (instant > from && out.length < count) out.push(iso(instant));
      }
    }
  }
  return out;
}
