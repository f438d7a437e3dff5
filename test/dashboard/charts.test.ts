import { load } from "cheerio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { cronRunsByDay, dayStateOf } from "../../src/dashboard/charts/cron-days.js";
import { cronStrip, DAY_STATES } from "../../src/dashboard/charts/cron-strip.js";
import { dayIndexOf, lastDays } from "../../src/dashboard/charts/days.js";
import { niceAxisTop, SERIES_COLOURS, stackedBarChart } from "../../src/dashboard/charts/stacked-bars.js";
import { usageByDay } from "../../src/dashboard/charts/usage-days.js";
import { JobStore } from "../../src/scheduler/job-store.js";
import { UsageLedger } from "../../src/usage/ledger.js";
import { summarizeUsage } from "../../src/usage/usage-summary.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const ZONE = "Europe/Berlin";
const HOUR = 3_600_000;
/** Wednesday 2026-11-04 10:00 in Berlin: the 30 days before it cross the end of summer time (25 October). */
const NOW = Date.UTC(2026, 10, 4, 9, 0, 0);

/** The page's background in light and dark mode (src/dashboard/layout.ts, --bg). */
const LIGHT_PAGE = "#ffffff";
const DARK_PAGE = "#121318";

/** WCAG contrast ratio of two #rrggbb colours. */
function contrast(first: string, second: string): number {
  const luminance = (hex: string) => {
    const [r, g, b] = [1, 3, 5].map((at) => {
      const channel = Number.parseInt(hex.slice(at, at + 2), 16) / 255;
      return channel <= 0.03928 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
  };
  const [light, dark] = [luminance(first), luminance(second)].sort((a, b) => b - a);
  return (light! + 0.05) / (dark! + 0.05);
}

let magpie: TestApp;
beforeAll(async () => {
  magpie = await startTestApp({ llm: false, features: [schedulerFeature], config: { timezone: ZONE } });
});
afterAll(() => magpie.stop());

describe("chart days", () => {
  it("the last 30 local days, oldest first, contiguous, today last; the day summer time ends has 25 hours", () => {
    const days = lastDays(NOW, ZONE, 30);
    expect(days).toHaveLength(30);
    expect(days[29]!.date).toBe("2026-11-04");
    expect(days[29]!.label).toBe("4 Nov");
    expect(days[0]!.date).toBe("2026-10-06");
    for (let index = 1; index < days.length; index++) expect(days[index]!.start).toBe(days[index - 1]!.end);
    expect(
      days.find((day) => day.date === "2026-10-25")!.end -
        days.find((day) => day.date === "2026-10-25")!.start,
    ).toBe(25 * HOUR);
    expect(dayIndexOf(days, NOW)).toBe(29);
    expect(dayIndexOf(days, days[0]!.start - 1)).toBe(-1);
    expect(dayIndexOf(days, days[12]!.start)).toBe(12);
  });

  it("axis tops are round", () => {
    expect([0, 3, 9, 41, 1234, 0.013, 100].map(niceAxisTop)).toEqual([1, 3, 10, 60, 1600, 0.016, 100]);
  });
});

describe("usage per day by model", () => {
  it("reads the real ledger: tokens and cost per local day, the biggest models named, the rest summed", () => {
    const db = magpie.app.store.db;
    const ledger = new UsageLedger(db);
    const call = (at: number, model: string, tokens: number, costUsd: number | null) =>
      ledger.insert({
        at,
        origin: "user",
        sessionKey: "test:1",
        historyKey: "test:1",
        turnId: null,
        jobId: null,
        runId: null,
        taskId: null,
        agent: "main",
        kind: "chat",
        model,
        promptTokens: tokens - 10,
        completionTokens: 10,
        estimated: false,
        costUsd,
      });
    const days = lastDays(NOW, ZONE, 30);
    // Two calls on the last day, one on 25 October at 23:30 local (after the clocks went back), six models.
    call(days[29]!.start + HOUR, "big-model", 1000, 0.5);
    call(days[29]!.start + 2 * HOUR, "big-model", 500, 0.25);
    const lateOn25 = days.find((day) => day.date === "2026-10-25")!.end - HOUR / 2;
    call(lateOn25, "small-model", 300, null);
    for (const [index, model] of ["m1", "m2", "m3", "m4"].entries())
      call(days[3]!.start + index, model, 10 + index, 0.001);
    // Outside the 30 days: not counted.
    call(days[0]!.start - 1, "big-model", 99_999, 9);

    const usage = usageByDay(db, days);
    expect(usage.tokens.map((series) => series.name)).toEqual([
      "big-model",
      "small-model",
      "m4",
      "m3",
      "2 other models",
    ]);
    expect(usage.tokens[0]!.values[29]).toBe(1500);
    expect(usage.tokens[1]!.values[days.findIndex((day) => day.date === "2026-10-25")]).toBe(300);
    expect(usage.tokens[4]!.values[3]).toBe(10 + 11);
    expect(usage.cost[0]!.values[29]).toBeCloseTo(0.75);
    expect(usage.unpricedCalls).toBe(1);
    // The chart and /usage agree.
    const summary = summarizeUsage(db, days[0]!.start, days[29]!.end);
    expect(usage.totalTokens).toBe(summary.totals.tokens);
    expect(usage.totalCostUsd).toBeCloseTo(summary.totals.costUsd!);
  });

  it("the SVG: a bar per day with a title per segment, a title and description, escaped names, and a table", () => {
    const days = lastDays(NOW, ZONE, 30);
    const values = days.map((_, index) => index * 100);
    const $ = load(
      String(
        stackedBarChart({
          id: "t",
          title: "Tokens per day",
          description: "All of them",
          days,
          series: [
            { name: "<script>alert(1)</script>", values },
            { name: "other", values: days.map(() => 50) },
          ],
          format: (value) => `${value} tokens`,
          formatAxis: String,
        }),
      ),
      null,
      false,
    );
    expect($("svg[role=img]").attr("aria-labelledby")).toBe("t-title t-desc");
    expect($("#t-title").text()).toBe("Tokens per day");
    expect($("g[data-day]")).toHaveLength(30);
    // Day 0 has no first-series segment (0 tokens): 29 + 30 rects.
    expect($("g[data-day] rect")).toHaveLength(59);
    expect($("g[data-day='2026-11-04'] rect title").first().text()).toBe(
      "Wed 4 Nov · <script>alert(1)</script>: 2900 tokens",
    );
    expect($("script")).toHaveLength(0);
    expect($("g[data-day='2026-11-04'] > title").text()).toBe("Wed 4 Nov: 2950 tokens");
    expect($("table tr")).toHaveLength(31);
    expect($(".chart-legend li")).toHaveLength(2);
    // The highest bar stays inside the plot.
    const tops = $("rect[y]")
      .map((_, rect) => Number($(rect).attr("y")))
      .get();
    expect(Math.min(...tops)).toBeGreaterThanOrEqual(12);
  });

  it("series colours stand out from the light and the dark page (3:1) and differ from each other", () => {
    for (const colour of SERIES_COLOURS) {
      expect(contrast(colour, LIGHT_PAGE), colour).toBeGreaterThanOrEqual(3);
      expect(contrast(colour, DARK_PAGE), colour).toBeGreaterThanOrEqual(3);
    }
    expect(new Set(SERIES_COLOURS).size).toBe(SERIES_COLOURS.length);
  });
});

describe("cron runs per day", () => {
  it("reads the real run history: each day's worst outcome, counted on the day of its slot", () => {
    const scheduler = magpie.app.context.services.scheduler!;
    const job = scheduler.add(
      { name: "backup", expression: "0 3 * * *", command: "true" },
      { createdFrom: { channel: "test", chatId: "1" } },
    );
    const other = scheduler.add(
      { name: "quiet", expression: "0 4 * * *", command: "true" },
      { createdFrom: { channel: "test", chatId: "1" } },
    );
    const jobs = new JobStore(magpie.app.store.db);
    const days = lastDays(NOW, ZONE, 14);
    const slot = (day: number) => days[day]!.start + 3 * HOUR;
    const ran = (day: number, status: "ok" | "error" | "timeout") => {
      const run = jobs.startRun(job.id, "schedule", slot(day), slot(day) + 1000);
      jobs.finishRun(run, status, "output", slot(day) + 2000);
    };
    ran(10, "ok");
    ran(11, "ok");
    ran(11, "error");
    ran(12, "timeout");
    // Missed while down: recorded on start-up the next day, counted on its slot's day.
    jobs.recordSkipped(job.id, "schedule", slot(13), slot(13) + 30 * HOUR, "Magpie was down", "missed");
    jobs.recordSkipped(job.id, "schedule", slot(9), slot(9), "still running", "skipped");
    ran(9, "ok");
    // Before the 14 days.
    jobs.recordSkipped(job.id, "schedule", days[0]!.start - HOUR, days[0]!.start, "old", "missed");

    const byJob = cronRunsByDay(magpie.app.store.db, days);
    expect(byJob.has(other.id)).toBe(false);
    const outcomes = byJob.get(job.id)!;
    expect(outcomes.map(dayStateOf)).toEqual([
      ...Array(9).fill("none"),
      "skipped",
      "ran",
      "failed",
      "failed",
      "missed",
    ]);
    expect(outcomes[11]).toEqual({ ran: 1, failed: 1, missed: 0, skipped: 0 });
    expect(outcomes[9]).toEqual({ ran: 1, failed: 0, missed: 0, skipped: 1 });

    const $ = load(String(cronStrip("backup", days, outcomes)), null, false);
    expect($("g[data-day]")).toHaveLength(14);
    expect($("g[data-state='failed']")).toHaveLength(2);
    expect($(`g[data-day='${days[11]!.date}'] title`).text()).toBe(`${days[11]!.longLabel}: 1 ok, 1 failed`);
    expect($(`g[data-day='${days[13]!.date}'] text`).text()).toBe("!");
    expect($(`g[data-day='${days[0]!.date}'] rect.cron-none`)).toHaveLength(1);
    expect($("svg").attr("aria-label")).toContain("2 with a failure");
    expect($("svg").attr("aria-label")).toContain(`missed ${days[13]!.longLabel}`);
  });

  it("each state is told apart without colour (its own sign) and its colours pass contrast", () => {
    const states = Object.values(DAY_STATES);
    expect(new Set(states.map((state) => state.glyph)).size).toBe(states.length);
    expect(new Set(states.map((state) => state.label)).size).toBe(states.length);
    // The empty day is an outline in the page's own muted colour (class cron-none); the others are filled.
    for (const state of states.filter((one) => one.glyph)) {
      expect(contrast(state.text, state.fill), state.label).toBeGreaterThanOrEqual(4.5);
      expect(contrast(state.fill, LIGHT_PAGE), state.label).toBeGreaterThanOrEqual(3);
      expect(contrast(state.fill, DARK_PAGE), state.label).toBeGreaterThanOrEqual(3);
    }
  });
});
