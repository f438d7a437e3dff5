import { parseArgs } from "node:util";
import { instantOfLocalDate } from "../../usage/calendar.js";
import { PERIOD_LABELS, periodStart, USAGE_PERIODS, type UsagePeriod } from "../../usage/usage-command.js";
import { summarizeUsage } from "../../usage/usage-summary.js";
import { usageText } from "../../usage/usage-text.js";
import type { CliCommand } from "../cli-env.js";
import { jsonText } from "../terminal-output.js";

const USAGE = `Usage: magpie usage [--since <date>] [--json]
  --since <date>   YYYY-MM-DD or YYYY-MM-DDTHH:MM in the configured timezone, or today | week | month
                   (default today)
  --json           the totals by model and by origin as JSON`;

/** `magpie usage`: what the LLM calls cost since a date, by model and by origin (the `/usage` numbers). */
export const run: CliCommand = async (argv, env) => {
  let values: { since?: string; json?: boolean; help?: boolean };
  try {
    const parsed = parseArgs({
      args: argv,
      options: {
        since: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: false,
      strict: true,
    });
    values = parsed.values;
  } catch (error) {
    env.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    env.stdout.write(`${USAGE}\n`);
    return 0;
  }
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
