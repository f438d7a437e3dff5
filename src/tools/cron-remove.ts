import { z } from "zod";
import { jobIdSchema, schedulerCall, schedulerOf } from "./cron-shared.js";
import { defineTool } from "./define-tool.js";

export const cronRemoveTool = defineTool({
  name: "cron_remove",
  description: "Delete a scheduled job (and its run history).",
  inputSchema: z.object({ job_id: jobIdSchema }),
  risk: "medium",
  async execute(input, context) {
    const scheduler = schedulerOf(context);
    return schedulerCall(() => ({ removed: scheduler.remove(scheduler.resolve(input.job_id)) }));
  },
});
