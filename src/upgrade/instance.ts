import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { safeParseJson } from "../lib/parse-json.js";
import { isAlive } from "./process-info.js";

/**
 * The running Magpie of a data directory, as it wrote itself down in `<dataDir>/magpie.pid` (JSON) when it started:
 * `magpie reload` signals it, `magpie restore` refuses while it runs, `magpie upgrade` stops and restarts it.
 * Hand-written: a pid file is a few lines, and the packages for it (proper-lockfile, pidlock) lock with a directory
 * and a timer, which a crashed process on a Pi leaves behind just the same.
 */
/**
 * The pid file as read back: only the pid must be right (a file from an older release may lack a field, and a
 * running Magpie must still be found from it); the rest falls back to what says least.
 */
const instanceSchema = z.looseObject({
  pid: z.number().int().positive(),
  startedAt: z.string().catch(""),
  mode: z.enum(["start", "chat"]).catch("start"),
  version: z.string().catch("unknown"),
  http: z.object({ host: z.string(), port: z.number() }).nullable().catch(null),
  configPath: z.string().nullable().catch(null),
  execPath: z.string().catch(""),
  argv: z.array(z.string()).catch([]),
  cwd: z.string().catch(""),
});

export interface InstanceInfo {
  pid: number;
  /** ISO time the process wrote the file. */
  startedAt: string;
  /** `magpie start` or `magpie chat`. */
  mode: "start" | "chat";
  version: string;
  /** The HTTP address it listens on (null when it doesn't listen). */
  http: { host: string; port: number } | null;
  /** The config file it loaded (absolute), when known. */
  configPath: string | null;
  /** How it was started, to start it the same way again: `execPath` + `argv` in `cwd`. */
  execPath: string;
  argv: string[];
  cwd: string;
}

export function instanceFile(dataDir: string): string {
  return path.join(dataDir, "magpie.pid");
}

/** Writes the pid file (atomically); the returned function removes it if it is still this process's. */
export function recordInstance(dataDir: string, info: InstanceInfo): () => void {
  const file = instanceFile(dataDir);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
  return () => {
    if (readInstance(dataDir)?.pid === info.pid) rmSync(file, { force: true });
  };
}

/** The pid file's content, whether or not that process still runs (null when absent or unreadable). */
export function readInstance(dataDir: string): InstanceInfo | null {
  let text: string;
  try {
    text = readFileSync(instanceFile(dataDir), "utf8");
  } catch {
    return null;
  }
  const parsed = safeParseJson(text, instanceSchema, "pid file");
  return parsed.success ? parsed.data : null;
}

/**
 * The Magpie running on `dataDir`, or null: the pid file names a live process that is not this one. A pid the
 * kernel gave to another program after a crash is told apart by its command line (Linux: /proc).
 */
export function runningInstance(dataDir: string): InstanceInfo | null {
  const info = readInstance(dataDir);
  if (!info || info.pid === process.pid) return null;
  if (!isAlive(info.pid)) return null;
  const commandLine = procCommandLine(info.pid);
  if (commandLine !== null && !info.argv.some((arg) => arg.length > 0 && commandLine.includes(arg)))
    return null;
  return info;
}

function procCommandLine(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return null;
  }
}
