import { z } from "zod";
import { runView } from "./cron-runs.js";
import { jobFields, jobIdSchema, originOf, schedulerCall, schedulerOf, specOf } from "./cron-shared.js";
import { defineTool, ToolError } from "./define-tool.js";

const ACTIONS = ["create", "add", "once", "list", "get", "cancel", "remove", "pause", "resume"] as const;

export const scheduleTool = defineTool({
  name: "schedule",
  description:
    "Manage scheduled jobs in one tool. create/add: a recurring job (expression) or one-shot (delay/at); once: a one-shot (delay like 30m, or at an ISO time); list; get (job and recent runs); cancel/remove; pause; resume. Jobs run a shell command, an assistant prompt or a fixed message and report to this chat by default.",
  inputSchema: z.object({
    action: z.enum(ACTIONS).describe("What to do."),
    job_id: jobIdSchema.optional().describe("The job for get, cancel, remove, pause and resume."),
    ...jobFields,
  }),
  risk: "high",
  async execute(input, context) {
    const scheduler = schedulerOf(context);
    const { action, job_id, ...fields } = input;
    const jobId = () => {
      if (job_id === undefined) {
        throw new ToolError(
          "schedule.job_id_required",
          `action "${action}" needs job_id (see action "list").`,
        );
      }
      return scheduler.resolve(job_id);
    };
    return schedulerCall(() => {
      switch (action) {
        case "create":
        case "add":
          return scheduler.add(specOf(fields), originOf(context));
        case "once":
          if (fields.expression || (!fields.delay && !fields.at)) {
            throw new ToolError(
              "schedule.once_needs_time",
              'action "once" runs a job one time: give delay (30s, 30m, 2h, 1d) or at (ISO time), not expression.',
            );
          }
          return scheduler.add(specOf(fields), originOf(context));
        case "list": {
          const jobs = scheduler.list();
          return { count: jobs.length, jobs };
        }
        case "get": {
          const id = jobId();
          return { job: scheduler.get(id), recent_runs: scheduler.runs(id, 5).map(runView) };
        }
        case "cancel":
        case "remove":
          return { removed: scheduler.remove(jobId()) };
        case "pause":
          return scheduler.setEnabled(jobId(), false, originOf(context));
        case "resume":
          return scheduler.setEnabled(jobId(), true, originOf(context));
      }
    });
  },
});
