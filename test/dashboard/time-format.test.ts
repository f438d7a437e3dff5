import { describe, expect, it } from "vitest";
import { dashboardTimes, humanDuration } from "../../src/dashboard/time-format.js";

const now = Date.parse("2026-11-25T12:00:00Z");
const times = dashboardTimes("Europe/Berlin", () => now);

describe("dashboard times", () => {
  it("shows recent times relative and the exact local time on hover", async () => {
    expect(times.exact(Date.parse("2026-11-25T11:57:00Z"))).toBe("2026-11-25 12:57:00 GMT+1");
    expect(times.relative(Date.parse("2026-11-25T11:57:00Z"))).toBe("3 min. ago");
    expect(times.relative(Date.parse("2026-11-25T09:00:00Z"))).toBe("3 hr. ago");
    expect(times.relative(Date.parse("2026-11-25T14:00:00Z"))).toBe("in 2 hr.");
    expect(times.relative(now - 10_000)).toBe("just now");
    expect(times.relative(Date.parse("2026-11-20T09:00:00Z"))).toBe("20 Nov, 10:00");
    const element = String(await times.at(Date.parse("2026-11-25T11:57:00Z")));
    expect(element).toBe(
      '<time datetime="2026-11-25T11:57:00.000Z" title="2026-11-25 12:57:00 GMT+1">3 min. ago</time>',
    );
    expect(times.at(null)).toBe("");
  });

  it("writes durations people read", () => {
    expect([850, 1_234, 42_000, 250_000, 8e6, 4e8].map(humanDuration)).toEqual([
      "850 ms",
      "1.2 s",
      "42 s",
      "4 min 10 s",
      "2 h 13 min",
      "4 d 15 h",
    ]);
  });
});
