import { z } from "zod";
import { MEMORY_CATEGORIES } from "../memory/types.js";
import { defineTool } from "./define-tool.js";
import { ownersMemoryOf } from "./memory-of.js";

export const memoryStoreTool = defineTool({
  name: "memory_store",
  description:
    "Save a durable fact or preference to long-term memory (shared by all chats of this agent). Storing an " +
    "existing key replaces its content.",
  inputSchema: z.object({
    key: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .describe('Short stable identifier, e.g. "owner.timezone" or "nas.backup_schedule".'),
    content: z
      .string()
      .trim()
      .min(1)
      .max(20_000)
      .describe("The fact, written so it makes sense on its own later."),
    category: z
      .enum(MEMORY_CATEGORIES)
      .default("core")
      .describe(
        "core: lasting facts and preferences (default); daily: notes of the day; conversation: chat summaries.",
      ),
  }),
  risk: "low",
  async execute({ key, content, category }, context) {
    const outcome = await ownersMemoryOf(context, "memory_store").store({
      agent: context.agent,
      key,
      content,
      category,
      role: context.sender.role,
    });
    return {
      ok: true,
      key: outcome.memory.key,
      category: outcome.memory.category,
      action: outcome.created ? "created" : "updated",
      indexed: outcome.indexed,
    };
  },
});
