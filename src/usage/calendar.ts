import { instantsOf, nextDay, shiftedOutOfGap, type WallTime, wallTimeAt } from "../lib/zoned-time.js";

/** A half-open span of time [start, end) in ms. */
export interface Span {
  start: number;
  end: number;
}

/** The first instant of a local calendar day (midnight, or the end of a DST gap that swallows it). */
function midnightOf(wall: WallTime, timeZone: string): number {
  const midnight = { ...wall, hour: 0, minute: 0, second: 0 };
  return instantsOf(midnight, timeZone)[0] ?? shiftedOutOfGap(midnight, timeZone);
}

/** The local calendar day in `timeZone` that contains `instant`: `daily` and `perChat` count within it. */
export function dayAt(instant: number, timeZone: string): Span & { date: string } {
  const wall = wallTimeAt(instant, timeZone);
  const date = `${wall.year}-${pad(wall.month)}-${pad(wall.day)}`;
  return { date, start: midnightOf(wall, timeZone), end: midnightOf(nextDay(wall), timeZone) };
}

/** Since Monday 00:00 of the local week that contains `instant`. */
export function weekStartAt(instant: number, timeZone: string): number {
  const wall = wallTimeAt(instant, timeZone);
  const weekday = (new Date(Date.UTC(wall.year, wall.month - 1, wall.day)).getUTCDay() + 6) % 7;
  const monday = new Date(Date.UTC(wall.year, wall.month - 1, wall.day - weekday));
  return midnightOf(
    { ...wall, year: monday.getUTCFullYear(), month: monday.getUTCMonth() + 1, day: monday.getUTCDate() },
    timeZone,
  );
}

/** Since the 1st, 00:00, of the local month that contains `instant`. */
export function monthStartAt(instant: number, timeZone: string): number {
  return midnightOf({ ...wallTimeAt(instant, timeZone), day: 1 }, timeZone);
}

/** `YYYY-MM-DD` (midnight) or `YYYY-MM-DDTHH:MM[:SS]` read in `timeZone`; null when malformed. */
export function instantOfLocalDate(text: string, timeZone: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text.trim());
  if (!match) return null;
  const [, year, month, day, hour, minute, second] = match.map((part) => Number(part ?? 0)) as number[];
  if (month! < 1 || month! > 12 || day! < 1 || day! > 31 || hour! > 23 || minute! > 59 || second! > 59) {
    return null;
  }
  const wall = { year: year!, month: month!, day: day!, hour: hour!, minute: minute!, second: second! };
  return instantsOf(wall, timeZone)[0] ?? shiftedOutOfGap(wall, timeZone);
}

/** `YYYY-MM-DD HH:MM` on the clock in `timeZone`. */
export function localDateTime(instant: number, timeZone: string): string {
  const wall = wallTimeAt(instant, timeZone);
  return `${wall.year}-${pad(wall.month)}-${pad(wall.day)} ${pad(wall.hour)}:${pad(wall.minute)}`;
}

function pad(value: number): string {
  return String(value).padStart(2, "0");
}
