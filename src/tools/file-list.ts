import fs from "node:fs/promises";
import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";
import { displayPath } from "./files/file-io.js";
import { ancestorsWithin, walk } from "./files/walk.js";
import { guardPath, guardScope, hiddenFromWalk } from "./path-guard.js";

const DEFAULT_MAX = 500;

export const fileListTool = defineTool({
  name: "file_list",
  description:
    "List a directory (default: the workspace). Honours .gitignore and .magpieignore; directories end with '/'. Set recursive for the whole tree.",
  inputSchema: z.object({
    path: z
      .string()
      .min(1)
      .optional()
      .describe("Directory, relative to the workspace or absolute. Default: the workspace."),
    recursive: z.boolean().optional().describe("List the whole tree instead of one level."),
    include_ignored: z.boolean().optional().describe("Also list files matched by .gitignore/.magpieignore."),
    max_entries: z
      .number()
      .int()
      .min(1)
      .max(5000)
      .optional()
      .describe(`Stop after this many entries. Default ${DEFAULT_MAX}.`),
  }),
  risk: "low",
  readOnly: true,
  async execute(input, context) {
    const resolved = await guardPath(context, input.path ?? ".", "read");
    if (!resolved.exists)
      throw new ToolError("file.not_found", `No directory at ${input.path ?? "."} (${resolved.real}).`);
    if (!resolved.isDirectory)
      throw new ToolError("file.not_directory", `${input.path} is a file; use file_read to read it.`);
    const max = input.max_entries ?? DEFAULT_MAX;
    const isState = hiddenFromWalk(guardScope(context));
    let hiddenCount = 0;
    const hidden = (absolute: string) => {
      if (!isState(absolute)) return false;
      hiddenCount++;
      return true;
    };
    const lines: string[] = [];
    let truncated = false;
    for await (const entry of walk(resolved.real, {
      recursive: input.recursive ?? false,
      respectIgnore: !input.include_ignored,
      inheritedIgnoreFrom: ancestorsWithin(resolved.real, context.config.workspace),
      exclude: hidden,
    })) {
      if (lines.length >= max) {
        truncated = true;
        break;
      }
      if (entry.kind === "directory") lines.push(`${entry.relative}/`);
      else if (entry.kind === "symlink")
        lines.push(`${entry.relative} -> ${await fs.readlink(entry.absolute).catch(() => "?")}`);
      else {
        const size = await fs.stat(entry.absolute).then(
          (stats) => stats.size,
          () => 0,
        );
        lines.push(`${entry.relative}  (${size} bytes)`);
      }
    }
    const shown = displayPath(context, resolved.real) || ".";
    const hiddenNote = hiddenCount ? ` (${hiddenCount} hidden by file.magpie_state: Magpie's own state)` : "";
    const header = `${shown}/ — ${lines.length} entr${lines.length === 1 ? "y" : "ies"}${hiddenNote}${truncated ? ` (stopped at ${max}; narrow the path or raise max_entries)` : ""}`;
    return lines.length ? `${header}\n${lines.join("\n")}` : `${header} (empty)`;
  },
});
