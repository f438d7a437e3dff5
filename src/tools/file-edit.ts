import fs from "node:fs/promises";
import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";
import { checkSize, displayPath, requireExistingFile, unifiedDiff, writeText } from "./files/file-io.js";
import { markRead } from "./files/read-tracker.js";
import { guardPath } from "./path-guard.js";

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + needle.length))
    count++;
  return count;
}

export const fileEditTool = defineTool({
  name: "file_edit",
  description:
    "Replace old_text with new_text in a file. old_text must match exactly once (include surrounding lines to make it unique) unless replace_all is true. Returns a unified diff.",
  inputSchema: z.object({
    path: z.string().min(1).describe("File path, relative to the workspace or absolute."),
    old_text: z.string().min(1).describe("Exact text to replace, including whitespace."),
    new_text: z.string().describe("Replacement text."),
    replace_all: z
      .boolean()
      .optional()
      .describe("Replace every occurrence instead of requiring exactly one."),
  }),
  risk: "medium",
  async execute(input, context) {
    const resolved = await guardPath(context, input.path, "write");
    requireExistingFile(resolved);
    const stats = await fs.stat(resolved.real);
    checkSize(context, stats.size, input.path);
    const before = await fs.readFile(resolved.real, "utf8");
    const matches = countOccurrences(before, input.old_text);
    if (matches === 0) {
      throw new ToolError(
        "file.edit_no_match",
        `old_text was not found in ${input.path} (0 matches). Read the file with file_read and copy the text exactly, including whitespace.`,
      );
    }
    if (matches > 1 && !input.replace_all) {
      throw new ToolError(
        "file.edit_ambiguous",
        `old_text matches ${matches} times in ${input.path}. Include more surrounding lines to make it unique, or set replace_all: true.`,
      );
    }
    if (input.old_text === input.new_text)
      throw new ToolError("file.edit_noop", "old_text and new_text are identical; nothing to change.");
    const after = input.replace_all
      ? before.split(input.old_text).join(input.new_text)
      : before.replace(input.old_text, () => input.new_text);
    checkSize(context, Buffer.byteLength(after), input.path);
    await writeText(resolved.real, after);
    await markRead(context, resolved.real);
    const shown = displayPath(context, resolved.real);
    return `Edited ${shown} (${matches} replacement${matches === 1 ? "" : "s"}).\n${unifiedDiff(shown, before, after)}`;
  },
});
