import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";
import { checkSize, displayPath } from "./files/file-io.js";
import { guardPath } from "./path-guard.js";

export const fileAppendTool = defineTool({
  name: "file_append",
  description: "Append text to the end of a file (created with its parent directories if missing).",
  inputSchema: z.object({
    path: z.string().min(1).describe("File path, relative to the workspace or absolute."),
    content: z.string().min(1).describe("Text to append. Include a trailing newline if you want one."),
  }),
  risk: "medium",
  async execute(input, context) {
    const resolved = await guardPath(context, input.path, "write");
    if (resolved.isDirectory)
      throw new ToolError("file.is_directory", `${input.path} is a directory; give a file path.`);
    const currentSize = resolved.exists ? (await fs.stat(resolved.real)).size : 0;
    checkSize(context, currentSize + Buffer.byteLength(input.content), input.path);
    await fs.mkdir(path.dirname(resolved.real), { recursive: true });
    await fs.appendFile(resolved.real, input.content, "utf8");
    const shown = displayPath(context, resolved.real);
    return `Appended ${Buffer.byteLength(input.content)} bytes to ${shown} (now ${currentSize + Buffer.byteLength(input.content)} bytes).`;
  },
});
