import { html } from "hono/html";
import { summarizeUsage, type UsageTotals } from "../../usage/usage-summary.js";
import { CHART_STYLE } from "../charts/chart-style.js";
import { lastDays } from "../charts/days.js";
import { stackedBarChart } from "../charts/stacked-bars.js";
import { type UsageByDay, usageByDay } from "../charts/usage-days.js";
import type { PageBody } from "../layout.js";
import { type PageRoutes, respond } from "./page-context.js";

const DAY_MS = 86_400_000;
const PERIODS: Array<[string, number]> = [
  ["Last 24 hours", DAY_MS],
  ["Last 7 days", 7 * DAY_MS],
  ["Last 30 days", 30 * DAY_MS],
];

const usd = (totals: UsageTotals) => (totals.costUsd === null ? "—" : `$${totals.costUsd.toFixed(4)}`);
const CHART_DAYS = 30;
const count = new Intl.NumberFormat("en");
const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 });
const dollars = (value: number) => `$${value < 1 && value > 0 ? value.toFixed(4) : value.toFixed(2)}`;
const axisDollars = (value: number) =>
  `$${value < 1 && value > 0 ? Number(value.toPrecision(2)) : Number(value.toFixed(2))}`;

/** Tokens per day stacked by model, then the cost per day, for the last 30 days. */
function usageCharts(usage: UsageByDay): PageBody {
  const unpriced =
    usage.unpricedCalls > 0
      ? ` (${count.format(usage.unpricedCalls)} calls without a price in llm.prices not counted)`
      : "";
  return html`${CHART_STYLE}<section id="usage-charts" aria-label="Usage per day">
    <p class="chart-total"><b>${count.format(usage.totalTokens)}</b> tokens${
      usage.totalCostUsd === null ? "" : html` · <b>${dollars(usage.totalCostUsd)}</b>${unpriced}`
    } in the last ${CHART_DAYS} days.</p>
    ${stackedBarChart({
      id: "usage-tokens",
      title: `Tokens per day by model, last ${CHART_DAYS} days`,
      description: `${count.format(usage.totalTokens)} tokens in all, by ${usage.tokens.map((one) => one.name).join(", ") || "no model"}.`,
      days: usage.days,
      series: usage.tokens,
      format: (value) => `${count.format(value)} tokens`,
      formatAxis: (value) => compact.format(value),
    })}
    ${
      usage.cost.length > 0
        ? stackedBarChart({
            id: "usage-cost",
            title: `Cost per day by model (USD), last ${CHART_DAYS} days`,
            description: `${dollars(usage.totalCostUsd ?? 0)} in all${unpriced}.`,
            days: usage.days,
            series: usage.cost,
            format: dollars,
            formatAxis: axisDollars,
          })
        : html`<p>No cost: none of these calls has a price (set <code>llm.prices</code>).</p>`
    }
  </section>`;
}

/** `/ui/usage`: the last 30 days as charts, the usage ledger's totals per period, and by model and by origin. */
export const usageRoutes: PageRoutes = (app, deps) => {
  app.get("/ui/usage", (c) => {
    const now = Date.now();
    const totals = PERIODS.map(
      ([label, span]) => [label, summarizeUsage(deps.store.db, now - span, now)] as const,
    );
    const month = totals[totals.length - 1]![1];
    const part = html`<div id="usage">
      ${usageCharts(usageByDay(deps.store.db, lastDays(now, deps.timezone, CHART_DAYS)))}
      <h2>Totals</h2>
      <table>
        <tr><th>Period</th><th>Calls</th><th>Prompt tokens</th><th>Completion tokens</th><th>Cost</th></tr>
        ${totals.map(
          ([
            label,
            summary,
          ]) => html`<tr><td data-label="Period">${label}</td><td data-label="Calls">${summary.totals.calls}</td>
            <td data-label="Prompt tokens">${summary.totals.promptTokens}</td><td data-label="Completion tokens">${summary.totals.completionTokens}</td><td data-label="Cost">${usd(summary.totals)}</td></tr>`,
        )}
      </table>
      <h2>Last 30 days by model</h2>
      <table>
        <tr><th>Model</th><th>Kind</th><th>Calls</th><th>Tokens</th><th>Cost</th></tr>
        ${month.byModel.map(
          (model) =>
            html`<tr><td data-label="Model">${model.model}</td><td data-label="Kind">${model.kind}</td><td data-label="Calls">${model.calls}</td><td data-label="Tokens">${model.tokens}</td><td data-label="Cost">${usd(model)}</td></tr>`,
        )}
      </table>
      <h2>Last 30 days by origin</h2>
      <table>
        <tr><th>Origin</th><th>Calls</th><th>Tokens</th><th>Cost</th></tr>
        ${month.byOrigin.map(
          (
            origin,
          ) => html`<tr><td data-label="Origin">${origin.kind === "job" ? `job ${origin.jobName ?? origin.jobId}` : origin.key}</td>
            <td data-label="Calls">${origin.calls}</td><td data-label="Tokens">${origin.tokens}</td><td data-label="Cost">${usd(origin)}</td></tr>`,
        )}
      </table>
    </div>`;
    return respond(c, "Usage", part);
  });
};
