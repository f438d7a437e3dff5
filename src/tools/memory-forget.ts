import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";
import { ownersMemoryOf } from "./memory-of.js";

export const memoryForgetTool = defineTool({
  name: "memory_forget",
  description: "Delete a long-term memory by its key (for facts that are wrong or no longer true).",
  inputSchema: z.object({
    key: z.string().trim().min(1).max(200).describe("The key of the memory, as shown by memory_recall."),
  }),
  risk: "low",
  execute({ key }, context) {
    const removed = ownersMemoryOf(context, "memory_forget").forget(context.agent, key, context.sender.role);
    if (!removed) {
      throw new ToolError(
        "memory.not_found",
        `No memory with key "${key}". Use memory_recall to find the right key.`,
      );
    }
    return { ok: true, key: removed.key, action: "forgotten" };
  },
});
