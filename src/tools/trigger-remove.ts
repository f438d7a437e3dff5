import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { triggerCall, triggersOf } from "./trigger-shared.js";

export const triggerRemoveTool = defineTool({
  name: "trigger_remove",
  description: "Remove an event trigger made in chat (config triggers are changed in the config file).",
  inputSchema: z.object({ name: z.string().min(1).describe("The trigger's name (from trigger_list).") }),
  risk: "medium",
  async execute(input, context) {
    const triggers = triggersOf(context);
    return triggerCall(async () => ({ removed: await triggers.remove(input.name, context.sender) }));
  },
});
