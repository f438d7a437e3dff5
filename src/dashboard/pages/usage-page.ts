import { html } from "hono/html";
import { summarizeUsage, type UsageTotals } from "../../usage/usage-summary.js";
import { type PageRoutes, respond } from "./page-context.js";

const DAY_MS = 86_400_000;
const PERIODS: Array<[string, number]> = [
  ["Last 24 hours", DAY_MS],
  ["Last 7 days", 7 * DAY_MS],
  ["Last 30 days", 30 * DAY_MS],
];

const usd = (totals: UsageTotals) => (totals.costUsd === null ? "—" : `$${totals.costUsd.toFixed(4)}`);

/** `/ui/usage`: the usage ledger's totals per period, and the last 30 days by model and by origin. */
export const usageRoutes: PageRoutes = (app, deps) => {
  app.get("/ui/usage", (c) => {
    const now = Date.now();
    const totals = PERIODS.map(
      ([label, span]) => [label, summarizeUsage(deps.store.db, now - span, now)] as const,
    );
    const month = totals[totals.length - 1]![1];
    const part = html`<div id="usage">
      <table>
        <tr><th>Period</th><th>Calls</th><th>Prompt tokens</th><th>Completion tokens</th><th>Cost</th></tr>
        ${totals.map(
          ([label, summary]) => html`<tr><td>${label}</td><td>${summary.totals.calls}</td>
            <td>${summary.totals.promptTokens}</td><td>${summary.totals.completionTokens}</td><td>${usd(summary.totals)}</td></tr>`,
        )}
      </table>
      <h2>Last 30 days by model</h2>
      <table>
        <tr><th>Model</th><th>Kind</th><th>Calls</th><th>Tokens</th><th>Cost</th></tr>
        ${month.byModel.map(
          (model) =>
            html`<tr><td>${model.model}</td><td>${model.kind}</td><td>${model.calls}</td><td>${model.tokens}</td><td>${usd(model)}</td></tr>`,
        )}
      </table>
      <h2>Last 30 days by origin</h2>
      <table>
        <tr><th>Origin</th><th>Calls</th><th>Tokens</th><th>Cost</th></tr>
        ${month.byOrigin.map(
          (
            origin,
          ) => html`<tr><td>${origin.kind === "job" ? `job ${origin.jobName ?? origin.jobId}` : origin.key}</td>
            <td>${origin.calls}</td><td>${origin.tokens}</td><td>${usd(origin)}</td></tr>`,
        )}
      </table>
    </div>`;
    return respond(c, "Usage", part);
  });
};
