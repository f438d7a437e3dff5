import { z } from "zod";
import { deliverSchema, jobIdSchema, originOf, schedulerCall, schedulerOf, specOf } from "./cron-shared.js";
import { defineTool } from "./define-tool.js";

export const cronUpdateTool = defineTool({
  name: "cron_update",
  description:
    "Change a scheduled job: its cron expression, its command (or prompt/message), name, time zone, delivery, or enable/disable it.",
  inputSchema: z.object({
    job_id: jobIdSchema,
    expression: z.string().min(1).optional().describe("New cron expression."),
    command: z.string().min(1).optional().describe("New shell command."),
    enabled: z.boolean().optional().describe("false pauses the job, true resumes it."),
    prompt: z.string().min(1).optional().describe("New assistant prompt (makes it an agent job)."),
    message: z.string().min(1).optional().describe("New fixed message (makes it a message job)."),
    name: z.string().min(1).optional(),
    timezone: z.string().min(1).optional(),
    deliver: deliverSchema.optional(),
  }),
  risk: "high",
  async execute(input, context) {
    const scheduler = schedulerOf(context);
    const { job_id, enabled, ...fields } = input;
    return schedulerCall(() =>
      scheduler.update(scheduler.resolve(job_id), { ...specOf(fields), enabled }, originOf(context)),
    );
  },
});
