import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";

export const spillReadTool = defineTool({
  name: "spill_read",
  description:
    "Read a slice of a large tool output that was saved with a spill handle (shown in the truncated result).",
  inputSchema: z.object({
    handle: z.string().describe('The handle from the truncated output, like "spill-0123456789abcdef".'),
    offset: z.number().int().min(0).default(0).describe("Character offset to start at."),
    limit: z.number().int().min(1).max(20_000).default(8_000).describe("Number of characters to read."),
  }),
  risk: "low",
  readOnly: true,
  execute({ handle, offset, limit }, context) {
    const spill = context.services.spill;
    const slice = spill?.read(handle, offset, limit);
    if (!slice) throw new ToolError("spill.unknown_handle", `No spilled output named "${handle}".`);
    const end = Math.min(offset + limit, slice.total);
    const more = end < slice.total ? ` Next: offset ${end}.` : " (end of output)";
    return `[characters ${offset}–${end} of ${slice.total}]${more}\n${slice.text}`;
  },
});
