import { parseArgs } from "node:util";
import { systemClock } from "../../core/clock.js";
import { errorMessage } from "../../lib/errors.js";
import { silentLogger } from "../../log/logger.js";
import { createPhoneNotifier } from "../../notify/phone.js";
import { createScheduler } from "../../scheduler/create-scheduler.js";
import { parseAddArguments } from "../../scheduler/cron-command.js";
import { formatJobList, formatRuns } from "../../scheduler/format-text.js";
import type { DeliveryMode } from "../../scheduler/job.js";
import { JobStore } from "../../scheduler/job-store.js";
import { Authority } from "../../security/authority.js";
import { PairingStore } from "../../security/pairing.js";
import type { CliCommand } from "../cli-env.js";

const USAGE = `Usage: magpie cron <command>
  list                                   jobs with schedule, status and next run
  add <expression|delay> <command>       e.g. magpie cron add "0 8 * * *" "df -h"   or   add 30m "message: stretch"
      [--name N] [--timezone Z] [--channel C --chat ID] [--pushover] [--ntfy] [--mode always|on_error|on_success|none]
      (start the payload with "prompt:" for an assistant task or "message:" for fixed text)
  remove <id>                            delete a job and its history
  run <id>                               ask the running Magpie to run the job now (picked up within 15 s)
  runs <id> [--limit N]                  recent runs, newest first`;

const MODES = ["always", "on_error", "on_success", "none"];

/** `magpie cron list|add|remove|run|runs`: scheduled jobs, straight from the database. */
export const run: CliCommand = async (argv, env) => {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    env.stderr.write(`${errorMessage(error)}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (!command || values.help) {
    (values.help ? env.stdout : env.stderr).write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  if (values.mode && !MODES.includes(values.mode)) {
    env.stderr.write(`--mode must be one of ${MODES.join(", ")}, got "${values.mode}".\n`);
    return 2;
  }

  const config = env.loadConfig();
  const store = env.openStore(config);
  const authority = new Authority(config, new PairingStore(store.db), store.db);
  // The CLI edits the database only; the running Magpie's scheduler reads it on its next check.
  const unavailable = () => {
    throw new Error("jobs run in the Magpie process, not in the CLI");
  };
  const scheduler = createScheduler({
    db: store.db,
    outbox: store.outbox,
    messenger: { send: unavailable, waitForDelivery: unavailable },
    notifier: createPhoneNotifier(config.notify),
    executor: { execute: unavailable },
    clock: systemClock,
    logger: silentLogger(),
    settings: {
      timezone: config.timezone,
      catchUp: config.cron.catchUp,
      maxRunHistory: config.cron.maxRunHistory,
      runTimeoutMs: config.cron.runTimeoutSecs * 1000,
    },
    // A CLI job is the owner's; its report chat passes the same rule as the message tool's.
    authority: () => authority,
  });
  const jobs = new JobStore(store.db);
  try {
    switch (command) {
      case "list":
        env.stdout.write(`${formatJobList(scheduler.list())}\n`);
        return 0;
      case "add": {
        const text = rest.join(" ").trim();
        if (!text) return usageError(env, "add needs a schedule and a command.");
        const spec = parseAddArguments(text);
        const chat =
          values.channel && values.chat ? { channel: values.channel, chatId: values.chat } : undefined;
        if ((values.channel && !values.chat) || (!values.channel && values.chat)) {
          return usageError(env, "--channel and --chat go together (the chat to post reports in).");
        }
        const job = scheduler.add(
          {
            ...spec,
            name: values.name,
            timezone: values.timezone,
            deliver: {
              ...(chat ?? {}),
              pushover: values.pushover ?? false,
              ...(values.ntfy ? { ntfy: true } : {}),
              mode: (values.mode as DeliveryMode | undefined) ?? "always",
            },
          },
          { source: "cli" },
        );
        env.stdout.write(
          `Added job #${job.id} "${job.name}" (${job.schedule}, ${job.timezone}) — next run ${job.next_run}.\n`,
        );
        if (!chat && !values.pushover && !values.ntfy) {
          env.stdout.write(
            "Note: no --channel/--chat, --pushover or --ntfy given, so runs are only recorded (magpie cron runs).\n",
          );
        }
        return 0;
      }
      case "remove": {
        const job = scheduler.remove(scheduler.resolve(rest.join(" ")));
        env.stdout.write(`Removed job #${job.id} "${job.name}".\n`);
        return 0;
      }
      case "run": {
        const id = scheduler.resolve(rest.join(" "));
        jobs.requestRun(id, systemClock.now());
        env.stdout.write(
          `Requested a run of job #${id}; the running Magpie starts it within 15 s (see: magpie cron runs ${id}).\n`,
        );
        return 0;
      }
      case "runs": {
        const id = scheduler.resolve(rest[0] ?? "");
        const limit = values.limit === undefined ? 10 : Number(values.limit);
        if (!Number.isInteger(limit) || limit < 1)
          return usageError(env, `--limit must be a positive whole number.`);
        env.stdout.write(`${formatRuns(id, scheduler.runs(id, limit))}\n`);
        return 0;
      }
      default:
        return usageError(env, `Unknown command "${command}".`);
    }
  } catch (error) {
    env.stderr.write(`${errorMessage(error)}\n`);
    return 1;
  } finally {
    store.close();
  }
};

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      timezone: { type: "string" },
      channel: { type: "string" },
      chat: { type: "string" },
      pushover: { type: "boolean" },
      ntfy: { type: "boolean" },
      mode: { type: "string" },
      limit: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

function usageError(env: Parameters<CliCommand>[1], problem: string): number {
  env.stderr.write(`${problem}\n${USAGE}\n`);
  return 2;
}
