import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/**
 * Times as owners read them: in the configured time zone, relative while recent ("3 min ago", "in 2 h"), the exact
 * time on hover (`title`) and machine-readable in `datetime`. `Intl` does the zone and relative wording.
 */
export interface DashboardTimes {
  /** `<time>` element: relative within a day, else the local date and time; exact on hover. */
  at(epochMs: number | null | undefined): HtmlEscapedString | Promise<HtmlEscapedString> | string;
  /** The exact local time, e.g. "2026-11-24 20:09:55 CET". */
  exact(epochMs: number): string;
  /** Relative wording only ("3 min ago"), or the local time when more than a day away. */
  relative(epochMs: number): string;
}

const RELATIVE_LIMIT_MS = 24 * 3_600_000;

export function dashboardTimes(timeZone: string, now: () => number = Date.now): DashboardTimes {
  const exactFormat = new Intl.DateTimeFormat("en-CA", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    timeZoneName: "short",
  });
  const shortFormat = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  const words = new Intl.RelativeTimeFormat("en", { numeric: "auto", style: "short" });
  const exact = (epochMs: number): string => {
    const parts = Object.fromEntries(
      exactFormat.formatToParts(epochMs).map((part) => [part.type, part.value]),
    );
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`;
  };
  const relative = (epochMs: number): string => {
    const delta = epochMs - now();
    const size = Math.abs(delta);
    if (size >= RELATIVE_LIMIT_MS) return shortFormat.format(epochMs);
    if (size < 45_000) return delta <= 0 ? "just now" : "in a moment";
    if (size < 3_600_000) return words.format(Math.round(delta / 60_000), "minute");
    return words.format(Math.round(delta / 3_600_000), "hour");
  };
  return {
    exact,
    relative,
    at: (epochMs) => {
      if (epochMs === null || epochMs === undefined || !Number.isFinite(epochMs)) return "";
      return html`<time datetime="${new Date(epochMs).toISOString()}" title="${exact(epochMs)}">${relative(epochMs)}</time>`;
    },
  };
}

/** A duration people read: "850 ms", "1.2 s", "4 min 10 s", "2 h 5 min", "3 d 4 h". */
export function humanDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 60_000) return `${Math.round(ms / 1_000)} s`;
  const seconds = Math.round(ms / 1_000);
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 1_440) return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  const hours = Math.round(minutes / 60);
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}
