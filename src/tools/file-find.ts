import fs from "node:fs/promises";
import picomatch from "picomatch";
import { z } from "zod";
import { guardPath, guardScope, hiddenFromWalk } from "../security/path-guard.js";
import { defineTool, ToolError } from "./define-tool.js";
import { displayPath } from "./files/file-io.js";
import { ancestorsWithin, walk } from "./files/walk.js";

const DEFAULT_LIMIT = 100;
/** Stops very large trees from keeping a call busy for long. */
const MAX_SCANNED = 50_000;

export const fileFindTool = defineTool({
  name: "file_find",
  description:
    "Find files by glob pattern (e.g. '**/*.ts', 'src/**/config.*'), newest first. Honours .gitignore and .magpieignore.",
  inputSchema: z.object({
    pattern: z.string().min(1).describe("Glob pattern relative to path, e.g. '**/*.md'."),
    path: z.string().min(1).optional().describe("Directory to search in. Default: the workspace."),
    limit: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .optional()
      .describe(`Maximum results. Default ${DEFAULT_LIMIT}.`),
  }),
  risk: "low",
  async execute(input, context) {
    const resolved = await guardPath(context, input.path ?? ".", "read");
    if (!resolved.isDirectory)
      throw new ToolError("file.not_directory", `${input.path ?? "."} is not a directory.`);
    const matches = picomatch(input.pattern, { dot: true });
    const hidden = hiddenFromWalk(guardScope(context));
    const found: Array<{ path: string; mtimeMs: number }> = [];
    let scanned = 0;
    for await (const entry of walk(resolved.real, {
      recursive: true,
      inheritedIgnoreFrom: ancestorsWithin(resolved.real, context.config.workspace),
      exclude: hidden,
    })) {
      if (++scanned > MAX_SCANNED) break;
      if (entry.kind === "directory" || !matches(entry.relative)) continue;
      const stats = await fs.lstat(entry.absolute).catch(() => null);
      if (stats) found.push({ path: entry.relative, mtimeMs: stats.mtimeMs });
    }
    found.sort((a, b) => b.mtimeMs - a.mtimeMs || a.path.localeCompare(b.path));
    const limit = input.limit ?? DEFAULT_LIMIT;
    const shown = found.slice(0, limit);
    const base = displayPath(context, resolved.real) || ".";
    if (shown.length === 0) return `No files match ${input.pattern} under ${base}/.`;
    const more =
      found.length > limit ? ` (showing ${limit} of ${found.length}, newest first)` : " (newest first)";
    return `${found.length} match${found.length === 1 ? "" : "es"} for ${input.pattern} under ${base}/${more}\n${shown
      .map((file) => `${file.path}  ${new Date(file.mtimeMs).toISOString()}`)
      .join("\n")}`;
  },
});
