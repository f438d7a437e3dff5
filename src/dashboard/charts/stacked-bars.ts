import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { ChartDay } from "./days.js";

/*
 * Server-rendered SVG rather than a charting library: a stacked bar per day is a few dozen <rect>s, works without
 * JavaScript (and so in the lean page the dashboard serves), carries a <title> on every bar for hover and screen
 * readers, and costs no bundle. Every value comes with a table for reading exact numbers.
 */

/** One stacked series: a value per day, in the days' order. */
export interface DailySeries {
  name: string;
  values: number[];
}

export interface StackedBarsInput {
  /** Unique on the page: names the title, description and table ids. */
  id: string;
  title: string;
  description: string;
  days: readonly ChartDay[];
  series: readonly DailySeries[];
  /** A value as people read it: "12.3k tokens", "$0.42". */
  format: (value: number) => string;
  /** Axis labels: shorter ("12k", "$0.4"). */
  formatAxis: (value: number) => string;
}

/**
 * Fills for the series, in order: the colour-blind-safe Okabe–Ito hues, adjusted so each keeps at least 3:1 contrast
 * (WCAG 1.4.11) with both the light and the dark page; segments are also parted by a line in the page's colour.
 */
export const SERIES_COLOURS = ["#0072b2", "#d55e00", "#009e73", "#a8527e", "#8a6d00", "#7d55b0", "#808080"];

const WIDTH = 560;
const HEIGHT = 240;
const LEFT = 52;
const RIGHT = 24;
const TOP = 12;
const BOTTOM = 28;
const FONT = 13;

const ROUND_STEPS = [1, 1.5, 2, 2.5, 3, 4, 5, 6, 7.5, 8, 10];

/** The axis top: four times the smallest round step (1, 1.5, 2, 2.5 … 10 × 10ⁿ) that reaches `max`. */
export function niceAxisTop(max: number): number {
  if (!(max > 0)) return 1;
  const roughStep = max / 4;
  const power = 10 ** Math.floor(Math.log10(roughStep));
  // A hair of slack: 0.75 computed as 7.5 × 0.1 must still reach 0.75.
  const step = ROUND_STEPS.map((factor) => factor * power).find(
    (candidate) => candidate >= roughStep * 0.999_999,
  )!;
  return Number((step * 4).toPrecision(12));
}

/** Stacked bars per day with a y axis, a legend and, folded away, the same numbers as a table. */
export function stackedBarChart(input: StackedBarsInput): HtmlEscapedString | Promise<HtmlEscapedString> {
  const { days, series } = input;
  const totals = days.map((_, day) => series.reduce((sum, one) => sum + (one.values[day] ?? 0), 0));
  const top = niceAxisTop(Math.max(0, ...totals));
  const plotWidth = WIDTH - LEFT - RIGHT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slot = plotWidth / Math.max(1, days.length);
  const barWidth = Math.max(1, slot * 0.75);
  const y = (value: number) => TOP + plotHeight - (value / top) * plotHeight;
  const round = (value: number) => Math.round(value * 10) / 10;
  // Every seventh day back from today, so today is always labelled and the labels never crowd.
  const labelled = (index: number) => (days.length - 1 - index) % 7 === 0;

  const grid = [0, 1, 2, 3, 4].map((step) => {
    const value = (top / 4) * step;
    const at = round(y(value));
    return html`<line class="chart-grid" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${at}" y2="${at}" stroke-width="1" />
      <text x="${LEFT - 6}" y="${at + FONT / 3}" text-anchor="end">${input.formatAxis(value)}</text>`;
  });
  const bars = days.map((day, index) => {
    const x = round(LEFT + index * slot + (slot - barWidth) / 2);
    let base = 0;
    const segments = series.map((one, seriesIndex) => {
      const value = one.values[index] ?? 0;
      if (value <= 0) return "";
      const from = y(base);
      base += value;
      const to = y(base);
      return html`<rect x="${x}" y="${round(to)}" width="${round(barWidth)}" height="${round(Math.max(0.5, from - to))}" fill="${SERIES_COLOURS[seriesIndex % SERIES_COLOURS.length]}" class="chart-segment" stroke-width="0.75"><title>${day.longLabel} · ${one.name}: ${input.format(value)}</title></rect>`;
    });
    const label = labelled(index)
      ? html`<text x="${round(x + barWidth / 2)}" y="${HEIGHT - BOTTOM + FONT + 4}" text-anchor="middle">${day.label}</text>`
      : "";
    return html`<g data-day="${day.date}"><title>${day.longLabel}: ${input.format(totals[index]!)}</title>${segments}</g>${label}`;
  });

  return html`<figure class="chart" id="${input.id}">
    <svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${input.id}-title ${input.id}-desc" font-size="${FONT}" font-family="system-ui, sans-serif">
      <title id="${input.id}-title">${input.title}</title>
      <desc id="${input.id}-desc">${input.description}</desc>
      ${grid}
      <line class="chart-axis" x1="${LEFT}" x2="${LEFT}" y1="${TOP}" y2="${TOP + plotHeight}" stroke-width="1" />
      ${bars}
    </svg>
    <figcaption>
      <ul class="chart-legend">
        ${series.map(
          (one, index) =>
            html`<li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${SERIES_COLOURS[index % SERIES_COLOURS.length]}" /></svg> ${one.name}</li>`,
        )}
      </ul>
      <details>
        <summary>${input.title} as a table</summary>
        <div class="chart-table">
          <table>
            <tr><th>Day</th>${series.map((one) => html`<th>${one.name}</th>`)}<th>Total</th></tr>
            ${days.map(
              (day, index) =>
                html`<tr><td data-label="Day">${day.longLabel}</td>${series.map(
                  (one) => html`<td data-label="${one.name}">${input.format(one.values[index] ?? 0)}</td>`,
                )}<td data-label="Total">${input.format(totals[index]!)}</td></tr>`,
            )}
          </table>
        </div>
      </details>
    </figcaption>
  </figure>`;
}
