import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { checkSize, displayPath, requireExistingFile } from "./files/file-io.js";
import { describeImage, isImagePath } from "./files/image.js";
import { markRead } from "./files/read-tracker.js";
import { guardPath } from "./path-guard.js";

const DEFAULT_LIMIT = 2000;
const MAX_LINE_CHARS = 2000;

export const fileReadTool = defineTool({
  name: "file_read",
  description:
    "Read a text file with line numbers. Use offset (1-based first line) and limit (number of lines) for large files. Image files are described (format, size, dimensions) instead of dumped.",
  inputSchema: z.object({
    path: z.string().min(1).describe("File path, relative to the workspace or absolute."),
    offset: z.number().int().min(1).optional().describe("First line to read (1-based). Default 1."),
    limit: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .optional()
      .describe(`Number of lines to read. Default ${DEFAULT_LIMIT}.`),
  }),
  risk: "low",
  readOnly: true,
  async execute(input, context) {
    const resolved = await guardPath(context, input.path, "read");
    requireExistingFile(resolved);
    const stats = await fs.stat(resolved.real);
    checkSize(context, stats.size, input.path);
    const shown = displayPath(context, resolved.real);
    if (isImagePath(resolved.real)) {
      await markRead(context, resolved.real);
      const image = await describeImage(resolved.real);
      return `${shown} is an image file (${image.format ?? "unknown format"}, ${image.width ?? "?"}×${image.height ?? "?"} px, ${stats.size} bytes). Use image_info for details.`;
    }
    const buffer = await fs.readFile(resolved.real);
    if (buffer.subarray(0, 8000).includes(0)) {
      await markRead(context, resolved.real);
      return `${shown} looks like a binary file (${stats.size} bytes, ${path.extname(resolved.real) || "no extension"}); not shown as text.`;
    }
    await markRead(context, resolved.real);
    const lines = buffer.toString("utf8").split("\n");
    if (lines.length > 1 && lines.at(-1) === "") lines.pop();
    const offset = input.offset ?? 1;
    const limit = input.limit ?? DEFAULT_LIMIT;
    const slice = lines.slice(offset - 1, offset - 1 + limit);
    const width = String(offset + slice.length - 1).length;
    const body = slice
      .map((line, index) => {
        const clipped =
          line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [line truncated]` : line;
        return `${String(offset + index).padStart(width, " ")}\t${clipped}`;
      })
      .join("\n");
    const last = offset + slice.length - 1;
    const header =
      slice.length === 0
        ? `${shown}: ${lines.length} lines; offset ${offset} is past the end.`
        : `${shown} (lines ${offset}–${last} of ${lines.length})${last < lines.length ? ` — more: offset ${last + 1}` : ""}`;
    return slice.length === 0 ? header : `${header}\n${body}`;
  },
});
