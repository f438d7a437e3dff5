import { formatTokens, formatUsd } from "./budget-message.js";
import { localDateTime } from "./calendar.js";
import type { OriginUsage, UsageSummary, UsageTotals } from "./usage-summary.js";

/** One line's figures; estimated counts are marked with `~` and say how many calls were estimated. */
function figures(totals: UsageTotals): string {
  const calls = `${totals.calls} call${totals.calls === 1 ? "" : "s"}`;
  const tokens = `${totals.estimatedCalls > 0 ? "~" : ""}${formatTokens(totals.tokens)}`;
  const parts = [
    calls,
    `${tokens} (${totals.promptTokens.toLocaleString("en-US")} in, ${totals.completionTokens.toLocaleString("en-US")} out)`,
  ];
  if (totals.costUsd !== null) {
    parts.push(
      totals.unpricedCalls > 0
        ? `${formatUsd(totals.costUsd)} + ${totals.unpricedCalls} unpriced`
        : formatUsd(totals.costUsd),
    );
  }
  if (totals.estimatedCalls > 0) parts.push(`${totals.estimatedCalls} estimated`);
  return parts.join(", ");
}

function originLabel(origin: OriginUsage): string {
  if (origin.kind === "job") return `job ${origin.jobId}${origin.jobName ? ` "${origin.jobName}"` : ""}`;
  if (origin.kind === "memory") return "memory (embeddings)";
  return origin.key;
}

/** `/usage` and `magpie usage` as text: totals, then by model and by origin. `label`: "today", "this week" … */
export function usageText(summary: UsageSummary, label: string | null, timeZone: string): string {
  const since = `since ${localDateTime(summary.since, timeZone)} ${timeZone}`;
  const header = label ? `Usage ${label} (${since})` : `Usage ${since}`;
  if (summary.totals.calls === 0) return `${header}: no LLM requests.`;
  const lines = [`${header}: ${figures(summary.totals)}`, "", "By model"];
  for (const model of summary.byModel) lines.push(`• ${model.model} (${model.kind}): ${figures(model)}`);
  lines.push("", "By origin");
  for (const origin of summary.byOrigin) lines.push(`• ${originLabel(origin)}: ${figures(origin)}`);
  if (summary.totals.estimatedCalls > 0) {
    lines.push("", "~ includes estimates: the provider sent no usage for those calls.");
  }
  if (summary.totals.unpricedCalls > 0) {
    lines.push("Costs count only models with a price in llm.prices.");
  }
  return lines.join("\n");
}
