import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { checkGitArgument, gitEnvironment, HARDENING, neutralizeDrivers } from "../security/git-arguments.js";
import { GuardRefusal } from "../security/guard-refusal.js";
import { resolveToolPath } from "../security/path-resolver.js";
import { isWithin } from "../security/paths.js";
import { type SandboxPlan, toolSandbox } from "../security/sandbox.js";
import type { ToolContext } from "./context.js";
import { defineTool, ToolError } from "./define-tool.js";
import { ensureWorkspace } from "./path-guard.js";
import { runProcess } from "./process/run-process.js";

const OPERATIONS = ["status", "diff", "log", "branch", "commit", "add", "checkout", "stash"] as const;
const FIELD = "\x1f";
/** diff and log never start an external diff program or a text converter. */
const NO_DRIVERS = ["--no-ext-diff", "--no-textconv", "--ignore-submodules=all"];
const DRIVER_KEYS = "^(filter|diff|merge)\\.";
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

/** Where git runs: the directory, the sandbox plan, and the overrides for this repository's drivers. */
interface GitSession {
  cwd: string;
  env: Record<string, string>;
  sandbox: SandboxPlan | undefined;
  overrides: string[];
}

async function git(context: ToolContext, session: GitSession, args: string[]): Promise<string> {
  const result = await runProcess({
    file: "git",
    args: ["--no-pager", ...HARDENING, ...session.overrides, ...args],
    cwd: session.cwd,
    env: session.env,
    timeoutMs: context.config.tools.shell.timeoutSecs * 1000,
    maxOutputBytes: context.config.tools.shell.maxOutputBytes,
    signal: context.signal,
    sandbox: session.sandbox,
  });
  if (result.timedOut)
    throw new ToolError(
      "git.timeout",
      `git ${args[0]} timed out after ${context.config.tools.shell.timeoutSecs} s.`,
    );
  if (result.exitCode !== 0) {
    const output = (result.stderr || result.stdout).trim().slice(0, 2000);
    if (/not a git repository/i.test(output))
      throw new ToolError(
        "git.not_a_repository",
        `${session.cwd} is not inside a git repository of the workspace (repositories above the workspace are never used). To start one, run \`git init\` there with the shell tool; that is fine.`,
      );
    throw new ToolError("git.failed", `git ${args[0]} failed (exit ${result.exitCode}): ${output}`);
  }
  return result.stdout;
}

/**
 * Opens the repository at `cwd`: discovery stops at the workspace's (and each allowed path's) parent, the
 * top level must lie inside the workspace, and every driver the repository's config defines is neutralized.
 */
async function openRepository(context: ToolContext, cwd: string, roots: string[]): Promise<GitSession> {
  const session: GitSession = {
    cwd,
    env: gitEnvironment(roots),
    sandbox: await toolSandbox(context),
    overrides: [],
  };
  const topLevel = (await git(context, session, ["rev-parse", "--show-toplevel"])).trim();
  const realTop = await fs.realpath(topLevel).catch(() => topLevel);
  if (!roots.some((root) => isWithin(realTop, root))) {
    throw new GuardRefusal(
      "git.repository_outside_workspace",
      `The repository at ${realTop} lies outside the workspace and tools.files.allowedPaths; git_operations only works on repositories inside ${context.config.workspace}.`,
    );
  }
  // Reading config runs nothing; with system and global config ignored this lists the repository's own drivers.
  const drivers = await git(context, session, ["config", "--null", "--get-regexp", DRIVER_KEYS]).catch(
    (error: ToolError) => {
      if (/exit 1\b/.test(error.message)) return "";
      throw error;
    },
  );
  session.overrides = neutralizeDrivers(drivers);
  return session;
}

function pathspec(list: string[] | undefined): string[] {
  return list && list.length > 0 ? ["--", ...list] : [];
}

async function run(context: ToolContext, cwd: GitSession, input: GitInput): Promise<Record<string, unknown>> {
  switch (input.operation) {
    case "status": {
      const out = await git(context, cwd, [
        "status",
        "--porcelain=v1",
        "--branch",
        "--ignore-submodules=all",
        ...pathspec(input.paths),
      ]);
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
      const numstat = await git(context, cwd, [
        "diff",
        ...NO_DRIVERS,
        ...cached,
        "--numstat",
        ...pathspec(input.paths),
      ]);
      const diff = await git(context, cwd, ["diff", ...NO_DRIVERS, ...cached, ...pathspec(input.paths)]);
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
        ...NO_DRIVERS,
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
    const roots = scope.state.exceptions;
    return await run(context, await openRepository(context, cwd.real, roots), input);
  },
});
