import { z } from "zod";
import { GuardRefusal } from "../security/guard-refusal.js";
import { resolveToolPath } from "../security/path-resolver.js";
import { toolSandbox } from "../security/sandbox.js";
import { sanitizedEnv } from "../security/shell-env.js";
import { checkShellPolicy } from "../security/shell-policy.js";
import { defineTool, ToolError } from "./define-tool.js";
import { ensureWorkspace } from "./path-guard.js";
import { runProcess } from "./process/run-process.js";

const PARTIAL_OUTPUT_CHARS = 4000;

export const shellTool = defineTool({
  name: "shell",
  description:
    "Run a shell command line with `sh -c` in the workspace (or cwd). Returns exit_code, stdout and stderr separately. Runs in a sandbox when one is available: the workspace is writable, the rest of the filesystem read-only, /tmp private and the home directory empty. The environment holds no secrets; long-running commands are killed at the timeout.",
  inputSchema: z.object({
    command: z.string().min(1).describe("The command line, e.g. 'ls -la' or 'df -h | head -5'."),
    cwd: z
      .string()
      .min(1)
      .optional()
      .describe("Working directory inside the workspace. Default: the workspace."),
  }),
  risk: "high",
  async execute(input, context) {
    const settings = context.config.tools.shell;
    await checkShellPolicy(input.command, {
      allowCommands: settings.allowCommands,
      denyPatterns: settings.denyPatterns,
    });
    const cwd = await resolveToolPath(input.cwd ?? ".", await ensureWorkspace(context));
    if (!cwd.insideWorkspace) {
      throw new GuardRefusal(
        "shell.cwd_outside_workspace",
        `cwd ${cwd.real} is outside the workspace and tools.files.allowedPaths. Use a directory inside ${context.config.workspace}.`,
      );
    }
    if (!cwd.exists || !cwd.isDirectory)
      throw new ToolError("shell.cwd_not_found", `cwd ${input.cwd} is not an existing directory.`);
    const timeoutMs = settings.timeoutSecs * 1000;
    const result = await runProcess({
      file: "/bin/sh",
      args: ["-c", input.command],
      cwd: cwd.real,
      env: sanitizedEnv(),
      timeoutMs,
      maxOutputBytes: settings.maxOutputBytes,
      signal: context.signal,
      sandbox: await toolSandbox(context),
    });
    if (result.timedOut) {
      throw new ToolError(
        "shell.timeout",
        `Tool 'shell' timed out after ${timeoutMs} ms (tools.shell.timeoutSecs); the process group was killed. Partial stdout: ${result.stdout.slice(-PARTIAL_OUTPUT_CHARS) || "(none)"} Partial stderr: ${result.stderr.slice(-PARTIAL_OUTPUT_CHARS) || "(none)"}`,
      );
    }
    if (result.aborted)
      throw new ToolError("tool.aborted", "The command was stopped because the turn was cancelled.");
    const notes: string[] = [];
    for (const stream of ["stdout", "stderr"] as const) {
      const dropped = result.truncatedBytes[stream];
      if (dropped > 0)
        notes.push(
          `${stream} truncated: ${dropped} bytes beyond the ${settings.maxOutputBytes}-byte cap (tools.shell.maxOutputBytes) were dropped`,
        );
    }
    return {
      exit_code: result.exitCode,
      ...(result.signal ? { signal: result.signal } : {}),
      stdout: result.stdout,
      stderr: result.stderr,
      duration_ms: result.durationMs,
      ...(notes.length ? { truncated: notes.join("; ") } : {}),
    };
  },
});
