import { z } from "zod";
import { GuardRefusal } from "../security/guard-refusal.js";
import { defineTool, ToolError } from "./define-tool.js";

export const delegateTool = defineTool({
  name: "delegate",
  description:
    "Hand a sub-task to another named agent and wait for its answer. It runs with its own tool set and instructions; give it everything it needs in `prompt` and `context` (it does not see this conversation). Only agents whose tools lie within yours, or that your configuration lists in `delegates`, can be asked.",
  inputSchema: z.object({
    agent: z.string().min(1).describe("The agent's name (agents.<name> in the config)."),
    prompt: z.string().min(1).describe("What the agent should do."),
    context: z.string().optional().describe("Background the agent needs: facts, files, constraints."),
  }),
  risk: "medium",
  startsTurnWith: (input, context) => context.services.delegation?.toolsOf(input.agent, context) ?? undefined,
  async execute(input, context) {
    const delegation = context.services.delegation;
    if (!delegation)
      throw new ToolError("delegate.unavailable", "Delegation is not available in this Magpie.");
    const result = await delegation.delegate(input, context);
    if (!result.ok)
      throw result.refused
        ? new GuardRefusal(result.code, result.message)
        : new ToolError(result.code, result.message);
    return result.value;
  },
});
