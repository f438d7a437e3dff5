import { z } from "zod";
import { runView } from "./cron-runs.js";
import { jobIdSchema, schedulerCall, schedulerOf } from "./cron-shared.js";
import { defineTool } from "./define-tool.js";

export const cronRunTool = defineTool({
  name: "cron_run",
  description:
    "Run a scheduled job now, outside its schedule; waits for it and returns the run (its report is delivered as usual).",
  inputSchema: z.object({ job_id: jobIdSchema }),
  risk: "high",
  async execute(input, context) {
    const scheduler = schedulerOf(context);
    return schedulerCall(async () => runView(await scheduler.runNow(scheduler.resolve(input.job_id))));
  },
});
