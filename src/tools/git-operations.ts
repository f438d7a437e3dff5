import path from "node:path";
import { z } from "zod";
import { checkGitArgument } from "../security/git-arguments.js";
import { GuardRefusal } from "../security/guard-refusal.js";
import { ensureWorkspace } from "../security/path-guard.js";
import { resolveToolPath } from "../security/path-resolver.js";
import { sanitizedEnv } from "../security/shell-env.js";
import type { ToolContext } from "./context.js";
import { defineTool, ToolError } from "./define-tool.js";
import { runProcess } from "./process/run-process.js";

const OPERATIONS = ["status", "diff", "log", "branch", "commit", "add", "checkout", "stash"] as const;
const FIELD = "\x1f";
const RECORD = "\x1e";

const inputSchema = z.object({
  operation: z.enum(OPERATIONS).describe("status | diff | log | branch | commit | add | checkout | stash"),
  message: z.string().min(1).optional().describe("Commit message (commit) or stash message (stash)."),
  paths: z.array(z.string().min(1)).optional().describe("Limit diff/log/status to these paths."),
  branch: z.string().min(1).optional().describe("Branch to create (branch) or switch to (checkout)."),
  files: z.array(z.string().min(1)).optional().describe("Files to add, commit, or restore (checkout)."),
  cached: z.boolean().optional().describe("diff: show staged changes."),
  limit: z.number().int().min(1).max(500).optional().describe("log: number of commits (default 10)."),
  cwd: z
    .string()
    .min(1)
    .optional()
    .describe("Repository directory inside the workspace. Default: the workspace."),
});

type GitInput = z.output<typeof inputSchema>;

async function git(context: ToolContext, cwd: string, args: string[]): Promise<string> {
  const result = await runProcess({
    file: "git",
    // No pager, no editor, no fsmonitor program: git never starts anything but itself and the repo's hooks.
    args: [
      "--no-pager",
      "-c",
      "core.pager=cat",
      "-c",
      "core.editor=true",
      "-c",
      "core.fsmonitor=false",
      ...args,
    ],
    cwd,
    env: sanitizedEnv(process.env, { GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat", GIT_EDITOR: "true" }),
    timeoutMs: context.config.tools.shell.timeoutSecs * 1000,
    maxOutputBytes: context.config.tools.shell.maxOutputBytes,
    signal: context.signal,
  });
  if (result.timedOut)
    throw new ToolError(
      "git.timeout",
      `git ${args[0]} timed out after ${context.config.tools.shell.timeoutSecs} s.`,
    );
  if (result.exitCode !== 0) {
    throw new ToolError(
      "git.failed",
      `git ${args[0]} failed (exit ${result.exitCode}): ${(result.stderr || result.stdout).trim().slice(0, 2000)}`,
    );
  }
  return result.stdout;
}

function pathspec(list: string[] | undefined): string[] {
  return list && list.length > 0 ? ["--", ...list] : [];
}

async function run(context: ToolContext, cwd: string, input: GitInput): Promise<Record<string, unknown>> {
  switch (input.operation) {
    case "status": {
      const out = await git(context, cwd, ["status", "--porcelain=v1", "--branch", ...pathspec(input.paths)]);
      const lines = out.split("\n").filter(Boolean);
      const header = lines[0]?.startsWith("## ") ? lines.shift()!.slice(3) : "";
      const files = lines.map((line) => ({ index: line[0], worktree: line[1], path: line.slice(3) }));
      return {
        operation: "status",
        branch: header.split("...")[0],
        tracking: header,
        clean: files.length === 0,
        files,
      };
    }
    case "diff": {
      const cached = input.cached ? ["--cached"] : [];
      const numstat = await git(context, cwd, ["diff", ...cached, "--numstat", ...pathspec(input.paths)]);
      const diff = await git(context, cwd, ["diff", ...cached, ...pathspec(input.paths)]);
      const files = numstat
        .split("\n")
        .filter(Boolean)
        .map((line) => {
          const [added, removed, file] = line.split("\t");
          return { path: file, added: Number(added) || 0, removed: Number(removed) || 0 };
        });
      return { operation: "diff", cached: Boolean(input.cached), files, diff };
    }
    case "log": {
      const out = await git(context, cwd, [
        "log",
        `--max-count=${input.limit ?? 10}`,
        `--format=%H${FIELD}%an${FIELD}%aI${FIELD}%s${RECORD}`,
        ...pathspec(input.paths),
      ]).catch((error: ToolError) => {
        if (/does not have any commits/.test(error.message)) return "";
        throw error;
      });
      const commits = out
        .split(RECORD)
        .map((record) => record.trim())
        .filter(Boolean)
        .map((record) => {
          const [hash, author, date, subject] = record.split(FIELD);
          return { hash, author, date, subject };
        });
      return { operation: "log", commits };
    }
    case "branch": {
      if (input.branch) {
        await git(context, cwd, ["branch", input.branch]);
        return { operation: "branch", created: input.branch };
      }
      const out = await git(context, cwd, ["branch", "--format=%(HEAD)%(refname:short)"]);
      const lines = out.split("\n").filter(Boolean);
      return {
        operation: "branch",
        current: lines.find((line) => line.startsWith("*"))?.slice(1) ?? null,
        branches: lines.map((line) => line.slice(1)),
      };
    }
    case "add": {
      const files = [...(input.files ?? []), ...(input.paths ?? [])];
      if (files.length === 0)
        throw new ToolError("git.missing_files", "add needs files (or paths) to stage.");
      await git(context, cwd, ["add", "--", ...files]);
      return { operation: "add", staged: files };
    }
    case "commit": {
      if (!input.message) throw new ToolError("git.missing_message", "commit needs a message.");
      await git(context, cwd, ["commit", "-m", input.message, ...pathspec(input.files)]);
      const hash = (await git(context, cwd, ["rev-parse", "HEAD"])).trim();
      return { operation: "commit", hash, message: input.message };
    }
    case "checkout": {
      if (input.files && input.files.length > 0) {
        await git(context, cwd, ["checkout", "--", ...input.files]);
        return { operation: "checkout", restored: input.files };
      }
      if (!input.branch)
        throw new ToolError("git.missing_branch", "checkout needs a branch (or files to restore).");
      await git(context, cwd, ["checkout", input.branch, "--"]);
      return { operation: "checkout", branch: input.branch };
    }
    case "stash": {
      const out = await git(context, cwd, ["stash", "push", ...(input.message ? ["-m", input.message] : [])]);
      return { operation: "stash", result: out.trim() };
    }
  }
}

export const gitOperationsTool = defineTool({
  name: "git_operations",
  description:
    "Run a git operation in a repository inside the workspace: status, diff (cached?), log (limit?), branch (list, or create with branch), commit (message, files?), add (files), checkout (branch, or files to restore), stash (message?). Results are structured JSON.",
  inputSchema,
  risk: "medium",
  async execute(input, context) {
    if (input.message !== undefined) checkGitArgument(input.message, "message");
    if (input.branch !== undefined) checkGitArgument(input.branch, "branch");
    for (const file of [...(input.paths ?? []), ...(input.files ?? [])]) checkGitArgument(file, "path");
    const scope = await ensureWorkspace(context);
    const cwd = await resolveToolPath(input.cwd ?? ".", scope);
    if (!cwd.insideWorkspace) {
      throw new GuardRefusal(
        "git.cwd_outside_workspace",
        `cwd ${cwd.real} is outside the workspace and tools.files.allowedPaths. Use a repository inside ${context.config.workspace}.`,
      );
    }
    if (!cwd.exists || !cwd.isDirectory)
      throw new ToolError("git.cwd_not_found", `cwd ${input.cwd} is not an existing directory.`);
    // A workspace nested inside a larger repository must not let git touch files outside the workspace.
    for (const file of [...(input.paths ?? []), ...(input.files ?? [])]) {
      const resolved = await resolveToolPath(path.resolve(cwd.real, file), scope);
      if (!resolved.insideWorkspace) {
        throw new GuardRefusal(
          "git.path_outside_workspace",
          `${file} resolves to ${resolved.real}, outside the workspace. Use paths inside ${context.config.workspace}.`,
        );
      }
    }
    // commit and checkout change the repository: high risk, asked for only when the call as a whole wasn't already.
    const require = context.config.security.approvals.require;
    const alreadyAsked = require.includes("git_operations") || require.includes("risk:medium");
    if ((input.operation === "commit" || input.operation === "checkout") && !alreadyAsked) {
      const action = `git ${input.operation} ${JSON.stringify({ message: input.message, branch: input.branch, files: input.files })} in ${cwd.real}`;
      const decision = await context.requireApproval(action, "risk:high");
      if (decision !== "approved")
        throw new ToolError(
          decision === "timeout" ? "approval.timeout" : "approval.denied",
          `git ${input.operation} was not approved; nothing was done.`,
        );
    }
    return await run(context, cwd.real, input);
  },
});
