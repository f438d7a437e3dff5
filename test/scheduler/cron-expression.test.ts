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
