import fs from "node:fs/promises";
import { z } from "zod";
import { errorMessage } from "../lib/errors.js";
import { re2Pattern } from "../lib/re2-pattern.js";
import { type JudgeScope, judgePath, type SecurityLevel } from "../security/file-guard.js";
import { defineTool, ToolError } from "./define-tool.js";
import { displayPath } from "./files/file-io.js";
import { globMatcher } from "./files/glob.js";
import { GrepStopped, GrepWorker } from "./files/grep-worker.js";
import { ancestorsWithin, walk } from "./files/walk.js";
import { guardPath, guardScope, hiddenFromWalk } from "./path-guard.js";

const DEFAULT_MAX_RESULTS = 100;
const MAX_LINE_CHARS = 500;
/** Stops a search of a huge tree from keeping a call busy for long. */
const MAX_FILES_SCANNED = 20_000;
/** Matching time one search may take in all; the model gets an error asking for a simpler pattern past it. */
export const GREP_TIME_LIMIT_MS = 3000;

/**
 * True for a file inside the searched tree that file_read would refuse or question on its own account (`.env`,
 * keys, another name of a hard-linked file): its content stays out of the results. Being outside the workspace
 * is not re-judged here — the search root already was.
 */
function contentHidden(file: string, linkCount: number, level: SecurityLevel, scope: JudgeScope): boolean {
  if (linkCount > 1) return true;
  const findings = judgePath(
    {
      requested: file,
      lexical: file,
      real: file,
      exists: true,
      isDirectory: false,
      hardLinked: false,
      insideWorkspace: true,
    },
    "read",
    level,
    scope,
  );
  return findings.some((finding) => finding.verdict !== "allow");
}

export const fileGrepTool = defineTool({
  name: "file_grep",
  description:
    "Search file contents with a regular expression in RE2 syntax (linear time: no backreferences or lookaround). Returns structured matches {path, line, text}. Honours .gitignore and .magpieignore; filter files with glob (e.g. '**/*.ts').",
  inputSchema: z.object({
    pattern: z.string().min(1).describe("Regular expression, e.g. 'TODO|FIXME' or 'function\\s+main'."),
    path: z.string().min(1).optional().describe("File or directory to search. Default: the workspace."),
    glob: z
      .string()
      .min(1)
      .optional()
      .describe("Only search files whose path (relative to path) matches this glob."),
    case_sensitive: z.boolean().optional().describe("Default true."),
    max_results: z.number().int().min(1).max(2000).optional().describe(`Default ${DEFAULT_MAX_RESULTS}.`),
  }),
  risk: "low",
  readOnly: true,
  async execute(input, context) {
    const ignoreCase = input.case_sensitive === false;
    const checked = re2Pattern(input.pattern, { ignoreCase });
    if (typeof checked === "string")
      throw new ToolError("grep.invalid_regex", `Invalid regular expression ${input.pattern}: ${checked}`);
    const globMatches = input.glob ? globMatcher(input.glob, { basename: !input.glob.includes("/") }) : null;
    if (typeof globMatches === "string")
      throw new ToolError("grep.invalid_glob", `Invalid glob ${input.glob}: ${globMatches}`);
    const resolved = await guardPath(context, input.path ?? ".", "read");
    if (!resolved.exists)
      throw new ToolError("file.not_found", `Nothing at ${input.path} (${resolved.real}).`);
    const scope = guardScope(context);
    const level = context.config.security.level;
    const maxResults = input.max_results ?? DEFAULT_MAX_RESULTS;
    const matches: Array<{ path: string; line: number; text: string }> = [];
    let filesSearched = 0;
    let scanned = 0;
    const skipped: string[] = [];
    let truncated = false;

    const candidates = resolved.isDirectory
      ? walk(resolved.real, {
          recursive: true,
          inheritedIgnoreFrom: ancestorsWithin(resolved.real, context.config.workspace),
          exclude: hiddenFromWalk(scope),
        })
      : single(resolved.real);
    const worker = new GrepWorker(
      input.pattern,
      ignoreCase,
      MAX_LINE_CHARS,
      GREP_TIME_LIMIT_MS,
      context.signal,
    );
    try {
      for await (const entry of candidates) {
        if (entry.kind !== "file") continue;
        if (globMatches && !globMatches(entry.relative)) continue;
        const stats = await fs.stat(entry.absolute).catch(() => null);
        if (!stats) continue;
        if (++scanned > MAX_FILES_SCANNED) {
          truncated = true;
          break;
        }
        const isRoot = entry.absolute === resolved.real;
        if (
          (!isRoot && contentHidden(entry.absolute, stats.nlink, level, scope)) ||
          stats.size > context.config.tools.files.maxFileSizeBytes
        ) {
          skipped.push(displayPath(context, entry.absolute));
          continue;
        }
        const buffer = await fs.readFile(entry.absolute).catch(() => null);
        if (!buffer || buffer.subarray(0, 8000).includes(0)) continue;
        filesSearched++;
        const shown = displayPath(context, entry.absolute);
        const found = await worker.search(buffer, maxResults - matches.length).catch((error: unknown) => {
          throw searchError(error, input.pattern, shown);
        });
        for (const match of found.matches) matches.push({ path: shown, ...match });
        if (found.more) {
          truncated = true;
          break;
        }
      }
    } finally {
      worker.close();
    }
    return {
      pattern: input.pattern,
      matches,
      count: matches.length,
      truncated,
      files_searched: filesSearched,
      ...(skipped.length ? { skipped_by_guard: skipped.slice(0, 20) } : {}),
    };
  },
});

/** The tool error for a search the worker didn't finish: too slow a pattern, a stop, or the worker failing. */
function searchError(error: unknown, pattern: string, file: string): ToolError {
  if (error instanceof GrepStopped && error.reason === "aborted")
    return new ToolError("grep.aborted", "The search was stopped.");
  if (error instanceof GrepStopped)
    return new ToolError(
      "grep.pattern_too_slow",
      `The pattern ${pattern} took longer than ${GREP_TIME_LIMIT_MS} ms (stopped while searching ${file}); simplify it — fewer and smaller counted repetitions such as {0,50} — or narrow path/glob.`,
    );
  return new ToolError("grep.failed", `The search for ${pattern} failed in ${file}: ${errorMessage(error)}`);
}

async function* single(file: string) {
  yield { relative: file.split("/").pop() ?? file, absolute: file, kind: "file" as const };
}
