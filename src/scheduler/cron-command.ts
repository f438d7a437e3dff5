import type { SlashCommand } from "../core/commands.js";
import { errorMessage } from "../lib/errors.js";
import { cronProblem } from "./cron-expression.js";
import { formatJobList, formatRuns } from "./format-text.js";
import type { JobSpec } from "./job.js";
import type { Scheduler } from "./scheduler.js";

const USAGE = [
  "/cron list",
  "/cron add <cron expression> <command>   e.g. /cron add 0 8 * * * df -h",
  "/cron add <delay> <command>             e.g. /cron add 30m message: stretch",
  '  (the schedule may be quoted: /cron add "*/5 * * * *" uptime)',
  "  (start the payload with `prompt:` for an assistant task or `message:` for fixed text)",
  "/cron remove <id>   /cron run <id>   /cron runs <id> [limit]   /cron pause <id>   /cron resume <id>",
].join("\n");

const DELAY = /^(\d+\s*[smhd])+$/i;

const QUOTED = /^(["'“”‘’])(.*?)["'“”‘’](?:\s+|$)/s;

/**
 * Splits `/cron add` arguments into a schedule and a payload: a quoted schedule (`"0 8 * * 1-5"`, as people
 * type it; phones turn quotes curly), nickname, delay, 6 fields if valid, else 5.
 */
export function parseAddArguments(text: string): JobSpec {
  const quoted = QUOTED.exec(text.trim());
  if (quoted) {
    const inside = quoted[2]!.trim();
    const schedule = DELAY.test(inside) ? { delay: inside } : { expression: inside.split(/\s+/).join(" ") };
    return withPayload(schedule, text.trim().slice(quoted[0].length));
  }
  const tokens = text.trim().split(/\s+/);
  let schedule: Pick<JobSpec, "expression" | "delay">;
  let rest: string[];
  if (tokens[0]?.startsWith("@")) {
    schedule = { expression: tokens[0] };
    rest = tokens.slice(1);
  } else if (tokens[0] && DELAY.test(tokens[0])) {
    schedule = { delay: tokens[0] };
    rest = tokens.slice(1);
  } else {
    const six = tokens.slice(0, 6).join(" ");
    const count = tokens.length > 6 && cronProblem(six) === null ? 6 : 5;
    schedule = { expression: tokens.slice(0, count).join(" ") };
    rest = tokens.slice(count);
  }
  return withPayload(schedule, rest.join(" "));
}

/** The payload after the schedule: `prompt:` for an assistant task, `message:` for fixed text, else a command. */
function withPayload(schedule: Pick<JobSpec, "expression" | "delay">, text: string): JobSpec {
  const payload = text.trim();
  const kind = /^(prompt|message):\s*/i.exec(payload);
  if (!kind) return { ...schedule, command: payload };
  const body = payload.slice(kind[0].length);
  return kind[1]!.toLowerCase() === "prompt" ? { ...schedule, prompt: body } : { ...schedule, message: body };
}

/** `/cron list|add|remove|run|runs|pause|resume` — works without an LLM. */
export function cronCommand(scheduler: Scheduler): SlashCommand {
  return {
    name: "cron",
    description: "Scheduled jobs: list, add, remove, run, runs, pause, resume",
    usage: USAGE,
    async run({ args, target, sessionKey, sender }) {
      const [action = "list", ...rest] = args.split(/\s+/).filter(Boolean);
      const argument = args.slice(args.indexOf(action) + action.length).trim();
      try {
        switch (action.toLowerCase()) {
          case "list":
            return formatJobList(scheduler.list());
          case "add": {
            if (!argument) return `Usage:\n${USAGE}`;
            const { channel, chatId, threadId } = target;
            const job = scheduler.add(parseAddArguments(argument), {
              createdFrom: { channel, chatId, ...(threadId ? { threadId } : {}) },
              source: "chat",
              createdBy: sessionKey,
              // The owner typed it: their own job, no agent, no tool set narrower than the job's own.
              creator: { identity: sender },
            });
            return `Added job #${job.id} "${job.name}" (${job.schedule}, ${job.timezone}) — next run ${job.next_run}.`;
          }
          case "remove":
          case "delete": {
            const job = scheduler.remove(scheduler.resolve(rest.join(" ")));
            return `Removed job #${job.id} "${job.name}".`;
          }
          case "run": {
            const run = await scheduler.runNow(scheduler.resolve(rest.join(" ")));
            return `Job #${run.jobId} ran: ${run.status}${run.status === "skipped" ? " (a run is still going)" : ""}. The report is delivered as configured.`;
          }
          case "runs": {
            const [id = "", limit] = rest;
            const jobId = scheduler.resolve(id);
            return formatRuns(jobId, scheduler.runs(jobId, Number(limit) > 0 ? Number(limit) : 10));
          }
          case "pause":
          case "resume": {
            const job = scheduler.setEnabled(scheduler.resolve(rest.join(" ")), action === "resume", {
              creator: { identity: sender },
            });
            return `Job #${job.id} ${job.status}${job.next_run ? ` — next run ${job.next_run}` : ""}.`;
          }
          default:
            return `Unknown /cron action "${action}".\n${USAGE}`;
        }
      } catch (error) {
        return `⚠️ ${errorMessage(error)}`;
      }
    },
  };
}
