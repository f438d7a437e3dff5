import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { DayOutcomes, DayState } from "./cron-days.js";
import { dayStateOf } from "./cron-days.js";
import type { ChartDay } from "./days.js";

/*
 * Hand-written SVG (a row of 14 squares) rather than a charting library: no client JavaScript, readable without
 * it, and each square carries its own <title>.
 */

/**
 * How each state looks. Told apart without colour too: a different sign in each square (and the title). The fills
 * keep white signs at 4.5:1 or more and stand 3:1 out of the light and the dark page (WCAG 1.4.11); a day without
 * runs is a dashed outline in the page's muted colour (class `cron-none`).
 */
export const DAY_STATES: Record<DayState, { label: string; glyph: string; fill: string; text: string }> = {
  ran: { label: "ok", glyph: "✓", fill: "#1a7f37", text: "#ffffff" },
  failed: { label: "failed", glyph: "✕", fill: "#cf222e", text: "#ffffff" },
  missed: { label: "missed", glyph: "!", fill: "#9a6700", text: "#ffffff" },
  skipped: { label: "skipped", glyph: "–", fill: "#696e75", text: "#ffffff" },
  none: { label: "no run", glyph: "", fill: "transparent", text: "transparent" },
};

const CELL = 20;
const GAP = 4;

function square(x: number, state: DayState): HtmlEscapedString | Promise<HtmlEscapedString> {
  const look = DAY_STATES[state];
  return state === "none"
    ? html`<rect class="cron-none" x="${x + 0.5}" y="0.5" width="${CELL - 1}" height="${CELL - 1}" rx="3" stroke-dasharray="3 2" />`
    : html`<rect x="${x + 0.5}" y="0.5" width="${CELL - 1}" height="${CELL - 1}" rx="3" fill="${look.fill}" />`;
}

/** "3 ok, 1 failed" (or "no run"). */
export function describeDay(outcomes: DayOutcomes): string {
  const parts = (["ran", "failed", "missed", "skipped"] as const)
    .filter((outcome) => outcomes[outcome] > 0)
    .map((outcome) => `${outcomes[outcome]} ${DAY_STATES[outcome].label}`);
  return parts.length > 0 ? parts.join(", ") : "no run";
}

/** One job's last days as a strip of squares, oldest on the left; a summary for screen readers in <desc>. */
export function cronStrip(
  jobName: string,
  days: readonly ChartDay[],
  outcomes: readonly DayOutcomes[],
): HtmlEscapedString | Promise<HtmlEscapedString> {
  const width = days.length * (CELL + GAP) - GAP;
  const states = outcomes.map(dayStateOf);
  const count = (state: DayState) => states.filter((one) => one === state).length;
  const bad = days
    .map((day, index) => [day, states[index]] as const)
    .filter(([, state]) => state === "failed" || state === "missed")
    .map(([day, state]) => `${state} ${day.longLabel}`);
  const summary = `Last ${days.length} days of ${jobName}: ${count("ran")} days ok, ${count("failed")} with a failure, ${count("missed")} with a missed run, ${count("skipped")} with a skipped run, ${count("none")} without runs.${bad.length > 0 ? ` ${bad.join("; ")}.` : ""}`;
  return html`<svg class="cron-strip" viewBox="0 0 ${width} ${CELL}" width="${width}" height="${CELL}" role="img" aria-label="${summary}" font-family="system-ui, sans-serif" font-size="14" font-weight="700" text-anchor="middle">
    ${days.map((day, index) => {
      const state = states[index]!;
      const look = DAY_STATES[state];
      const x = index * (CELL + GAP);
      return html`<g data-day="${day.date}" data-state="${state}"><title>${day.longLabel}: ${describeDay(outcomes[index]!)}</title>
        ${square(x, state)}
        ${look.glyph ? html`<text x="${x + CELL / 2}" y="${CELL / 2 + 5}" fill="${look.text}">${look.glyph}</text>` : ""}
      </g>`;
    })}
  </svg>`;
}

/** The key under the strips: each state's square and its name. */
export function cronStripLegend(): HtmlEscapedString | Promise<HtmlEscapedString> {
  return html`<ul class="chart-legend">
    ${(Object.keys(DAY_STATES) as DayState[]).map((state) => {
      const look = DAY_STATES[state];
      return html`<li><svg width="16" height="16" viewBox="0 0 20 20" aria-hidden="true" font-family="system-ui, sans-serif" font-size="14" font-weight="700" text-anchor="middle">${square(0, state)}${look.glyph ? html`<text x="10" y="15" fill="${look.text}">${look.glyph}</text>` : ""}</svg> ${look.label}</li>`;
    })}
  </ul>`;
}
