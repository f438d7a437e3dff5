import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";

export const spawnTool = defineTool({
  name: "spawn",
  description:
    "Start a background subagent for a self-contained task (research, a long build, a check) and return at once with its task_id. It works with shell, file and git tools at most — never a tool you don't have yourself (the result lists its tools) — cannot ask anyone, and its result is posted into this chat when it finishes.",
  inputSchema: z.object({
    task: z
      .string()
      .min(1)
      .describe("The complete task: the subagent sees nothing else of this conversation."),
    label: z.string().min(1).max(60).optional().describe("A short name shown in /tasks and with the result."),
  }),
  risk: "medium",
  startsTurnWith: (_input, context) => context.services.subagents?.toolsOf(context),
  execute(input, context) {
    const subagents = context.services.subagents;
    if (!subagents)
      throw new ToolError("spawn.unavailable", "Background subagents are not available in this Magpie.");
    const result = subagents.spawn(input, context);
    if (!result.ok) throw new ToolError(result.code, result.message);
    return {
      task_id: result.value.taskId,
      status: "running",
      tools: result.value.tools,
      note: "The result will be posted into this chat when the task ends; /tasks lists it, /stop <task_id> cancels it.",
    };
  },
});
