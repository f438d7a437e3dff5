import { instantOfLocalDate } from "../../usage/calendar.js";
import { PERIOD_LABELS, periodStart, USAGE_PERIODS, type UsagePeriod } from "../../usage/usage-command.js";
import { summarizeUsage } from "../../usage/usage-summary.js";
import { usageText } from "../../usage/usage-text.js";
import type { CliCommand } from "../cli-env.js";
import { parseCli } from "../parse-cli.js";
import { jsonText } from "../terminal-output.js";

const USAGE = `Usage: magpie usage [--since <date>] [--json]
  --since <date>   YYYY-MM-DD or YYYY-MM-DDTHH:MM in the configured timezone, or today | week | month
                   (default today)
  --json           the totals by model and by origin as JSON`;

/** `magpie usage`: what the LLM calls cost since a date, by model and by origin (the `/usage` numbers). */
export const run: CliCommand = async (argv, env) => {
  const parsed = parseCli(argv, env, USAGE, { since: { type: "string" }, json: { type: "boolean" } });
  if (typeof parsed === "number") return parsed;
  const { values } = parsed;
  const config = env.loadConfig();
  const now = Date.now();
  const sinceText = values.since?.trim() || "today";
  const since = USAGE_PERIODS.includes(sinceText as UsagePeriod)
    ? periodStart(sinceText as UsagePeriod, now, config.timezone)
    : instantOfLocalDate(sinceText, config.timezone);
  if (since === null) {
    env.stderr.write(
      `--since: "${sinceText}" is not a date (YYYY-MM-DD) or today | week | month.\n${USAGE}\n`,
    );
    return 2;
  }
  const store = env.openStore(config);
  try {
    const summary = summarizeUsage(store.db, since, now + 1);
    if (values.json) {
      env.stdout.write(
        `${jsonText(
          {
            ...summary,
            since: new Date(summary.since).toISOString(),
            until: new Date(now).toISOString(),
            timezone: config.timezone,
          },
          2,
        )}\n`,
      );
    } else {
      const label = PERIOD_LABELS[sinceText as UsagePeriod] ?? null;
      env.stdout.write(`${usageText(summary, label, config.timezone)}\n`);
    }
    return 0;
  } finally {
    store.close();
  }
};
