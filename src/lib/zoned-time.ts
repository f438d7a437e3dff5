/** Wall-clock ↔ instant conversion for an IANA time zone, with the DST gap and overlap made explicit. */

export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** True when `timeZone` is an IANA name this runtime knows. */
export function isValidTimeZone(timeZone: string): boolean {
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock time at `instant` in `timeZone`. */
export function wallTimeAt(instant: number, timeZone: string): WallTime {
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(new Date(instant))) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year ?? 1970,
    month: parts.month ?? 1,
    day: parts.day ?? 1,
    hour: parts.hour ?? 0,
    minute: parts.minute ?? 0,
    second: parts.second ?? 0,
  };
}

/** The wall time read as if it were UTC: a number that orders wall times and does day arithmetic. */
export function naiveMs(wall: WallTime): number {
  return Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
}

/** UTC offset in ms at `instant` (positive east of Greenwich). */
export function offsetAt(instant: number, timeZone: string): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return naiveMs(wallTimeAt(whole, timeZone)) - whole;
}

/**
 * Every instant at which the clock in `timeZone` shows `wall`: one normally, none in a spring-forward gap,
 * two in a fall-back overlap (earlier first).
 */
export function instantsOf(wall: WallTime, timeZone: string): number[] {
  const naive = naiveMs(wall);
  const offsets = new Set([offsetAt(naive - 86_400_000, timeZone), offsetAt(naive + 86_400_000, timeZone)]);
  offsets.add(offsetAt(naive, timeZone));
  const found = new Set<number>();
  for (const offset of offsets) {
    const candidate = naive - offset;
    if (naiveMs(wallTimeAt(candidate, timeZone)) === naive) found.add(candidate);
  }
  return [...found].sort((a, b) => a - b);
}

/**
 * The instant for a wall time that falls in a spring-forward gap, shifted forward by the gap's length
 * (02:30 on the day Berlin jumps from 02:00 to 03:00 becomes 03:30) — what cronie and Temporal do.
 */
export function shiftedOutOfGap(wall: WallTime, timeZone: string): number {
  const naive = naiveMs(wall);
  return naive - offsetAt(naive - 86_400_000, timeZone);
}

/** The calendar day after `wall` (time of day kept). */
export function nextDay(wall: WallTime): WallTime {
  const date = new Date(Date.UTC(wall.year, wall.month - 1, wall.day + 1));
  return { ...wall, year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() };
}

/** Reads `YYYY-MM-DDTHH:MM[:SS]` as a wall time in `timeZone` (a time in a DST gap moves forward); null if malformed. */
export function instantOfLocalIso(text: string, timeZone: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text.trim());
  if (!match) return null;
  const [, year, month, day, hour, minute, second] = match.map(Number) as number[];
  const wall = { year: year!, month: month!, day: day!, hour: hour!, minute: minute!, second: second || 0 };
  return instantsOf(wall, timeZone)[0] ?? shiftedOutOfGap(wall, timeZone);
}
