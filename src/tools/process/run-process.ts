import { type SandboxPlan, sandboxArgv } from "../../security/sandbox.js";

export interface RunProcessOptions {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  /** Run inside bubblewrap under this plan (undefined: unsandboxed). */
  sandbox?: SandboxPlan;
}

export interface ProcessResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
  /** Bytes dropped from stdout/stderr beyond the cap. */
  truncatedBytes: { stdout: number; stderr: number };
  durationMs: number;
}

/** Grace between SIGTERM and SIGKILL for the process group. */
const KILL_GRACE_MS = 1000;

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  dropped = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    const room = this.cap - this.size;
    if (room <= 0) {
      this.dropped += chunk.length;
      return;
    }
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(kept);
    this.size += kept.length;
    this.dropped += chunk.length - kept.length;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/**
 * Runs a process as the leader of its own process group, so a timeout or abort kills everything it started
 * (children of children included). Output beyond the cap is counted, not kept. Never rejects.
 */
export async function runProcess(options: RunProcessOptions): Promise<ProcessResult> {
  const started = performance.now();
  // Each stream keeps at most maxOutputBytes; the rest is drained and counted so the child never blocks on a full pipe.
  const stdout = new CappedBuffer(options.maxOutputBytes);
  const stderr = new CappedBuffer(options.maxOutputBytes);
  const { execa } = await import("execa");
  // In the sandbox bwrap leads the group; killing it tears down the PID namespace and everything in it.
  const [file, args, env] = options.sandbox
    ? [
        "bwrap",
        sandboxArgv(options.sandbox, options.cwd, [options.file, ...options.args]),
        { ...options.env, TMPDIR: "/tmp" },
      ]
    : [options.file, options.args, options.env];
  const subprocess = execa(file, args, {
    cwd: options.cwd,
    env,
    extendEnv: false,
    detached: true,
    buffer: false,
    stdin: "ignore",
    reject: false,
    cleanup: true,
  });
  const pid = subprocess.pid;
  subprocess.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
  subprocess.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));

  let timedOut = false;
  let aborted = false;
  let forceKill: NodeJS.Timeout | undefined;
  const terminate = () => {
    killGroup(pid, "SIGTERM");
    forceKill ??= setTimeout(() => killGroup(pid, "SIGKILL"), KILL_GRACE_MS);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    terminate();
  }, options.timeoutMs);
  const onAbort = () => {
    aborted = true;
    terminate();
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();

  // When the leader exits, anything it left running in its group (background jobs holding our pipes) goes too.
  subprocess.once("exit", () => killGroup(pid, "SIGKILL"));
  const result = await subprocess;
  clearTimeout(timer);
  if (forceKill) clearTimeout(forceKill);
  options.signal?.removeEventListener("abort", onAbort);
  return {
    exitCode: typeof result.exitCode === "number" ? result.exitCode : null,
    signal: result.signal ?? null,
    stdout: stdout.text(),
    stderr: stderr.text(),
    timedOut,
    aborted,
    truncatedBytes: { stdout: stdout.dropped, stderr: stderr.dropped },
    durationMs: Math.round(performance.now() - started),
  };
}
