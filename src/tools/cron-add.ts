import { z } from "zod";
import { jobFields, originOf, schedulerCall, schedulerOf, specOf } from "./cron-shared.js";
import { defineTool } from "./define-tool.js";

export const cronAddTool = defineTool({
  name: "cron_add",
  description:
    "Schedule a job: a cron expression (recurring) or a delay (one-shot), running a shell command, an assistant prompt or a fixed message. Its output is reported to this chat by default. Returns the job with its id and next run.",
  inputSchema: z.object(jobFields),
  risk: "high",
  async execute(input, context) {
    const scheduler = schedulerOf(context);
    return schedulerCall(() => scheduler.add(specOf(input), originOf(context)));
  },
});
