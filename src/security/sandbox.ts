import { execFile } from "node:child_process";
import { lstatSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { MagpieConfig } from "../config/schema.js";
import { ToolError } from "../core/tool-error.js";
import { errorCode, MagpieError } from "../lib/errors.js";
import { magpieStatePaths } from "./magpie-state.js";
import { expandHome, isWithin } from "./paths.js";

export type SandboxMode = "auto" | "bwrap" | "off";

/** What the start-up log, `/status` and `magpie doctor` report about the sandbox. */
export interface SandboxStatus {
  mode: SandboxMode;
  active: boolean;
  reason: string;
}

/** The outcome of running bwrap once with the flags every sandboxed command uses. */
export interface SandboxProbe {
  available: boolean;
  detail: string;
  durationMs: number;
}

/** What a sandboxed command may see: Magpie's state and the home directories hidden, the exposed paths writable. */
export interface SandboxPlan {
  network: boolean;
  /** Magpie's state: covered by an empty tmpfs (directories) or /dev/null (files). */
  hidden: string[];
  /** Home directories: replaced by an empty tmpfs, their dotfiles hidden even where a home is exposed. */
  homes: string[];
  /** The workspace and `tools.files.allowedPaths`: bound read-write. */
  exposed: string[];
}

export const SANDBOX_FIX =
  "install bubblewrap (`sudo apt install bubblewrap`), or in a container allow unprivileged user namespaces (e.g. `docker run --security-opt seccomp=unconfined`, or `sysctl kernel.unprivileged_userns_clone=1`)";

const PROBE_TIMEOUT_MS = 5_000;
const FALLBACK_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Secrets a container or systemd hands to services; Magpie's tokens may be among them. */
const PLATFORM_SECRETS = ["/run/secrets", "/run/credentials"];

/**
 * systemd's notify sockets (the system manager's, the user manager's). deploy/magpie.service has NotifyAccess=all —
 * Magpie's notifications come from a child, systemd-notify — so systemd takes a datagram from any process of the
 * unit, a sandboxed command's too: `WATCHDOG=trigger` would restart Magpie, and enough restarts stop the unit
 * for good (StartLimitBurst). Covered by /dev/null, a connect() there is refused.
 */
export function notifySockets(uid = process.getuid?.()): string[] {
  return ["/run/systemd/notify", ...(uid === undefined ? [] : [`/run/user/${uid}/systemd/notify`])];
}

/** Namespaces and mounts every sandboxed command gets (before Magpie's state is hidden). */
function baseArgs(network: boolean): string[] {
  return [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--unshare-pid",
    "--proc",
    "/proc",
    "--unshare-ipc",
    ...(network ? [] : ["--unshare-net"]),
    "--die-with-parent",
    "--new-session",
  ];
}

/** Raised at start-up when `tools.shell.sandbox: bwrap` is configured and bwrap does not work here. */
export class SandboxUnavailableError extends MagpieError {
  constructor(detail: string) {
    super(
      "sandbox.unavailable",
      `tools.shell.sandbox is "bwrap" but the bubblewrap sandbox does not work here: ${detail}. Fix: ${SANDBOX_FIX}; or set tools.shell.sandbox: auto to run unsandboxed.`,
    );
    this.name = "SandboxUnavailableError";
  }
}

let probeCache: Promise<SandboxProbe> | undefined;

/**
 * Runs `bwrap … -- true` once per process (cached) with every flag a sandboxed command uses, the network cut
 * included. `bwrap` overrides the program (tests use a missing one); an override is not cached.
 */
export function probeSandbox(bwrap?: string): Promise<SandboxProbe> {
  if (bwrap !== undefined) return runProbe(bwrap);
  probeCache ??= runProbe("bwrap");
  return probeCache;
}

function runProbe(bwrap: string): Promise<SandboxProbe> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(
      bwrap,
      [...baseArgs(false), "--tmpfs", "/tmp", "--", "true"],
      { timeout: PROBE_TIMEOUT_MS, env: { PATH: process.env.PATH ?? FALLBACK_PATH } },
      (error, _stdout, stderr) => {
        const durationMs = Math.round((performance.now() - started) * 10) / 10;
        if (!error) {
          resolve({ available: true, detail: `bubblewrap works (probe ${durationMs} ms)`, durationMs });
          return;
        }
        const code = errorCode(error);
        const detail =
          code === "ENOENT"
            ? `${bwrap} is not installed`
            : `${bwrap} failed: ${String(stderr).trim() || error.message}`;
        resolve({ available: false, detail, durationMs });
      },
    );
  });
}

/** The sandbox status for `tools.shell`: off by config, active when the probe works, otherwise unsandboxed. */
export async function sandboxStatus(
  settings: { sandbox: SandboxMode },
  probe: () => Promise<SandboxProbe> = () => probeSandbox(),
): Promise<SandboxStatus> {
  if (settings.sandbox === "off") return { mode: "off", active: false, reason: "tools.shell.sandbox is off" };
  const result = await probe();
  if (result.available) return { mode: settings.sandbox, active: true, reason: result.detail };
  return { mode: settings.sandbox, active: false, reason: `${result.detail}; fix: ${SANDBOX_FIX}` };
}

/** Like `sandboxStatus`, but `bwrap` mode without a working bwrap is a start-up error. */
export async function requireSandboxStatus(
  settings: { sandbox: SandboxMode },
  probe: () => Promise<SandboxProbe> = () => probeSandbox(),
): Promise<SandboxStatus> {
  const status = await sandboxStatus(settings, probe);
  if (settings.sandbox === "bwrap" && !status.active)
    throw new SandboxUnavailableError((await probe()).detail);
  return status;
}

/** The plan for this configuration; `home` is the home directory the file tools use (a test's stand-in). */
export function sandboxPlan(
  config: Pick<MagpieConfig, "sourcePath" | "envFiles" | "dataDir" | "workspace" | "tools">,
  home: string = os.homedir(),
  sockets: string[] = notifySockets(),
): SandboxPlan {
  const state = magpieStatePaths(config, home);
  const homes = new Set([home, os.homedir(), ...(process.env.HOME ? [process.env.HOME] : [])]);
  return {
    network: config.tools.shell.network,
    hidden: [...state.protected, ...PLATFORM_SECRETS, ...sockets],
    homes: [...homes].map((entry) => path.resolve(entry)),
    exposed: state.exceptions.map((entry) => path.resolve(expandHome(entry, home))),
  };
}

type Mount = { target: string; kind: "hide" | "expose"; always?: "dir" };

function depth(target: string): number {
  return target === "/" ? 0 : target.split("/").length - 1;
}

/** `lstat` without throwing: symlinks and missing paths are not mount points (their real form is listed too). */
function kindOf(target: string): "dir" | "file" | null {
  try {
    const stats = lstatSync(target);
    if (stats.isSymbolicLink()) return null;
    return stats.isDirectory() ? "dir" : "file";
  } catch {
    return null;
  }
}

function dotfiles(home: string): string[] {
  try {
    return readdirSync(home)
      .filter((name) => name.startsWith("."))
      .map((name) => path.join(home, name));
  } catch {
    return [];
  }
}

/**
 * The bubblewrap argv that runs `command` in `cwd` under `plan`. Mounts are applied from the shallowest path to
 * the deepest (at equal depth hiding wins), so the innermost rule decides: the workspace stays reachable inside a
 * hidden directory or the home, and Magpie's state inside the workspace stays hidden.
 */
export function sandboxArgv(plan: SandboxPlan, cwd: string, command: string[]): string[] {
  const mounts: Mount[] = [{ target: "/tmp", kind: "hide", always: "dir" }];
  for (const target of [...plan.hidden, ...plan.homes]) mounts.push({ target, kind: "hide" });
  for (const target of plan.exposed) mounts.push({ target, kind: "expose" });
  // A home lying inside an exposed path (workspace: ~, allowedPaths: [~]) still keeps its dotfiles hidden.
  for (const home of plan.homes) {
    if (plan.exposed.some((exposed) => isWithin(home, exposed)))
      for (const target of dotfiles(home)) mounts.push({ target, kind: "hide" });
  }
  mounts.sort(
    (a, b) =>
      depth(a.target) - depth(b.target) ||
      (a.kind === b.kind ? a.target.localeCompare(b.target) : a.kind === "expose" ? -1 : 1),
  );

  const args = baseArgs(plan.network);
  const applied: Mount[] = [];
  for (const mount of mounts) {
    const kind = mount.always ?? kindOf(mount.target);
    if (!kind) continue;
    // Skip what an earlier mount already did: hiding inside a hidden tree, exposing inside an exposed one.
    const nearest = applied.filter((done) => isWithin(mount.target, done.target)).at(-1);
    if (nearest?.kind === mount.kind) continue;
    if (mount.kind === "expose") args.push("--bind", mount.target, mount.target);
    else if (kind === "dir") args.push("--tmpfs", mount.target);
    else args.push("--ro-bind", "/dev/null", mount.target);
    applied.push(mount);
  }
  args.push("--chdir", cwd, "--", ...command);
  return args;
}

/**
 * The plan a tool call runs under, or undefined when Magpie runs unsandboxed (`off`, or `auto` without bwrap).
 * In `bwrap` mode a sandbox that stopped working refuses the call instead of running it unsandboxed.
 */
export async function toolSandbox(context: {
  config: MagpieConfig;
  services: { homeDir?: string };
}): Promise<SandboxPlan | undefined> {
  const status = await sandboxStatus(context.config.tools.shell);
  if (status.active) {
    return sandboxPlan(context.config, context.services.homeDir);
  }
  if (status.mode === "bwrap")
    throw new ToolError(
      "sandbox.unavailable",
      `The bubblewrap sandbox is required but unavailable: ${status.reason}.`,
    );
  return undefined;
}
