import { z } from "zod";
import { schedulerOf } from "./cron-shared.js";
import { defineTool } from "./define-tool.js";

export const cronListTool = defineTool({
  name: "cron_list",
  description: "List scheduled jobs with their schedule, status and next run time.",
  inputSchema: z.object({}),
  risk: "low",
  readOnly: true,
  execute(_input, context) {
    const jobs = schedulerOf(context).list();
    return { count: jobs.length, jobs };
  },
});
