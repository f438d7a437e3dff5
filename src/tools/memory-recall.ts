import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { ownersMemoryOf } from "./memory-of.js";

export const memoryRecallTool = defineTool({
  name: "memory_recall",
  description:
    "Search long-term memory by meaning and keywords. Returns the best matches with their key, score and why they matched.",
  inputSchema: z.object({
    query: z.string().trim().min(1).max(2_000).describe("What to look for, in plain words."),
    limit: z.number().int().min(1).max(50).default(5).describe("Maximum number of memories (default 5)."),
  }),
  risk: "low",
  readOnly: true,
  async execute({ query, limit }, context) {
    const result = await ownersMemoryOf(context, "memory_recall").recall({
      agent: context.agent,
      query,
      role: context.sender.role,
      limit,
      signal: context.signal,
    });
    return {
      mode: result.mode,
      ...(result.fallbackReason ? { note: "Vector search failed; these are keyword matches only." } : {}),
      results: result.hits.map((hit) => ({
        key: hit.memory.key,
        content: hit.memory.content,
        category: hit.memory.category,
        score: Number(hit.score.toFixed(5)),
        matched_by: hit.matchedBy,
        why: hit.why,
        updated_at: new Date(hit.memory.updatedAt).toISOString(),
      })),
    };
  },
});
