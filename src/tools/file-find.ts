import fs from "node:fs/promises";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";
import { displayPath } from "./files/file-io.js";
import { globMatcher } from "./files/glob.js";
import { ancestorsWithin, walk } from "./files/walk.js";
import { guardPath, guardScope, hiddenFromWalk } from "./path-guard.js";

const DEFAULT_LIMIT = 100;
/** Stops very large trees from keeping a call busy for long. */
const MAX_SCANNED = 50_000;
/** Matching time one search may take in all; the model gets an error asking for a simpler glob past it. */
export const FIND_TIME_LIMIT_MS = 3000;
/** Matching gives the event loop a turn after this long, so even a slow glob over a big tree blocks nobody. */
const SLICE_MS = 20;

export const fileFindTool = defineTool({
  name: "file_find",
  description:
    "Find files by glob pattern (e.g. '**/*.ts', 'src/**/config.*', '*.{ts,js}'), newest first. Honours .gitignore and .magpieignore.",
  inputSchema: z.object({
    pattern: z
      .string()
      .min(1)
      .describe("Glob relative to path: *, ?, **, [a-z], [!a], {a,b}; a leading ! negates. E.g. '**/*.md'."),
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
  readOnly: true,
  async execute(input, context) {
    const resolved = await guardPath(context, input.path ?? ".", "read");
    if (!resolved.isDirectory)
      throw new ToolError("file.not_directory", `${input.path ?? "."} is not a directory.`);
    const matches = globMatcher(input.pattern);
    if (typeof matches === "string")
      throw new ToolError("find.invalid_glob", `Invalid glob ${input.pattern}: ${matches}`);
    const hidden = hiddenFromWalk(guardScope(context));
    const found: Array<{ path: string; mtimeMs: number }> = [];
    let scanned = 0;
    let matchingMs = 0;
    let sliceStarted = performance.now();
    for await (const entry of walk(resolved.real, {
      recursive: true,
      inheritedIgnoreFrom: ancestorsWithin(resolved.real, context.config.workspace),
      exclude: hidden,
    })) {
      if (++scanned > MAX_SCANNED) break;
      if (entry.kind === "directory") continue;
      const started = performance.now();
      const matched = matches(entry.relative);
      const now = performance.now();
      matchingMs += now - started;
      if (matchingMs > FIND_TIME_LIMIT_MS)
        throw new ToolError(
          "find.pattern_too_slow",
          `The glob ${input.pattern} took longer than ${FIND_TIME_LIMIT_MS} ms to match; simplify it (fewer ? and * in a row) or narrow path.`,
        );
      if (now - sliceStarted > SLICE_MS) {
        await yieldToLoop();
        sliceStarted = performance.now();
      }
      if (!matched) continue;
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
