import { dayAt } from "../../usage/calendar.js";

/** One local calendar day of a chart: `[start, end)` in ms, its date and a short label ("24 Nov"). */
export interface ChartDay {
  date: string;
  start: number;
  end: number;
  label: string;
  /** "Tue 24 Nov", for titles. */
  longLabel: string;
}

/** The last `count` local days in `timeZone`, today included, oldest first (DST days are 23 or 25 hours). */
export function lastDays(now: number, timeZone: string, count: number): ChartDay[] {
  const short = new Intl.DateTimeFormat("en-GB", { timeZone, day: "numeric", month: "short" });
  const long = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    weekday: "short",
    day: "numeric",
    month: "short",
  });
  const days: ChartDay[] = [];
  let day = dayAt(now, timeZone);
  for (let index = 0; index < count; index++) {
    // Noon of the day names it whatever its length.
    const middle = day.start + (day.end - day.start) / 2;
    days.unshift({
      ...day,
      label: short.format(middle),
      longLabel: long.format(middle).replace(",", ""),
    });
    day = dayAt(day.start - 1, timeZone);
  }
  return days;
}

/** The index of the day that holds `at`, or -1 outside them (days are contiguous and sorted). */
export function dayIndexOf(days: readonly ChartDay[], at: number): number {
  let low = 0;
  let high = days.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const day = days[middle]!;
    if (at < day.start) high = middle - 1;
    else if (at >= day.end) low = middle + 1;
    else return middle;
  }
  return -1;
}
