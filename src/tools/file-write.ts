import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";
import { checkSize, displayPath, readTextIfExists, unifiedDiff, writeText } from "./files/file-io.js";
import { markRead, overwriteProblem } from "./files/read-tracker.js";
import { guardPath } from "./path-guard.js";

export const fileWriteTool = defineTool({
  name: "file_write",
  description:
    "Create or overwrite a text file (parent directories are created). Overwriting an existing file requires reading it with file_read first in this session. Returns a unified diff.",
  inputSchema: z.object({
    path: z.string().min(1).describe("File path, relative to the workspace or absolute."),
    content: z.string().describe("The complete new content of the file."),
  }),
  risk: "medium",
  async execute(input, context) {
    const resolved = await guardPath(context, input.path, "write");
    if (resolved.isDirectory)
      throw new ToolError("file.is_directory", `${input.path} is a directory; give a file path.`);
    checkSize(context, Buffer.byteLength(input.content), input.path);
    let before = "";
    if (resolved.exists) {
      const problem = await overwriteProblem(context, resolved.real);
      if (problem) throw new ToolError("file.not_read", problem);
      before = (await readTextIfExists(resolved.real)) ?? "";
    }
    await writeText(resolved.real, input.content);
    await markRead(context, resolved.real);
    const shown = displayPath(context, resolved.real);
    const diff = unifiedDiff(shown, before, input.content);
    const summary = resolved.exists
      ? `Wrote ${shown} (${Buffer.byteLength(input.content)} bytes).`
      : `Created ${shown} (${Buffer.byteLength(input.content)} bytes).`;
    return diff ? `${summary}\n${diff}` : `${summary} Content unchanged.`;
  },
});
