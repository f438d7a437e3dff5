import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { triggersOf } from "./trigger-shared.js";

export const triggerListTool = defineTool({
  name: "trigger_list",
  description:
    "List event triggers (from the config and made in chat) with their source, predicate, action, target and counts since start: fired, filtered out, errors, dropped.",
  inputSchema: z.object({}),
  risk: "low",
  readOnly: true,
  execute(_input, context) {
    return { triggers: triggersOf(context).list() };
  },
});
