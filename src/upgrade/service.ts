import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { constants } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { type InstanceInfo, readInstance } from "./instance.js";
import { environmentOf, isAlive, sleep, userOf } from "./process-info.js";
import { UpgradeError } from "./upgrade-error.js";

const STOP_WAIT_MS = 25_000;
/**
 * A release that never came up has no turn to finish; one hung in a migration can't even run its SIGTERM handler,
 * and SQLite rolls back the transaction a SIGKILL cuts off.
 */
const NEVER_UP_WAIT_MS = 5_000;

/** How the running Magpie is stopped and started again: its systemd unit, or a detached process. */
export interface ServiceControl {
  /** For the owner: "systemd unit magpie.service" or "a detached process". */
  readonly description: string;
  stop(instance: InstanceInfo): Promise<void>;
  /** Starts Magpie from `mainScript` (the install link's bundle); resolves once a new pid file names it. */
  start(options: StartOptions): Promise<Started>;
}

export interface StartOptions {
  previous: InstanceInfo;
  mainScript: string;
  dataDir: string;
  /** Where a detached process logs. */
  logFile: string;
  timeoutMs: number;
}

export interface Started {
  instance: InstanceInfo;
  /** Set when the new process is ours (detached): resolves with its exit code if it exits. */
  exited: Promise<number | null> | null;
  /** Where its output goes. */
  log: string;
}

/** The systemd unit the pid runs in (`MAGPIE_SYSTEMD_UNIT` wins), from /proc/<pid>/cgroup; null outside systemd. */
export function systemdUnitOf(pid: number): { unit: string; user: boolean } | null {
  const named = process.env.MAGPIE_SYSTEMD_UNIT;
  if (named) return { unit: named, user: process.env.MAGPIE_SYSTEMD_USER === "1" };
  try {
    return unitFromCgroup(readFileSync(`/proc/${pid}/cgroup`, "utf8"));
  } catch {
    return null;
  }
}

/** The service unit a /proc/<pid>/cgroup names: cgroup v2 ("0::/system.slice/magpie.service") or v1's systemd line. */
export function unitFromCgroup(cgroup: string): { unit: string; user: boolean } | null {
  const marker = ":name=systemd:";
  for (const line of cgroup.split("\n")) {
    const cgroupPath = line.startsWith("0::")
      ? line.slice(3)
      : line.includes(marker)
        ? line.slice(line.indexOf(marker) + marker.length)
        : null;
    if (!cgroupPath) continue;
    const unit = cgroupPath.split("/").filter(Boolean).pop();
    // A login session's scope or the per-user manager is not Magpie's unit.
    if (unit?.endsWith(".service") && !unit.startsWith("user@")) {
      return { unit, user: cgroupPath.includes("/user@") };
    }
  }
  return null;
}

interface ProcessContext {
  env: NodeJS.ProcessEnv | null;
  user: { uid: number; gid: number } | null;
}

/** Picks how to control the Magpie with pid `instance.pid`: its systemd unit when it has one. */
export function serviceControlFor(instance: InstanceInfo): ServiceControl {
  const systemd = systemdUnitOf(instance.pid);
  if (systemd) return systemdControl(systemd.unit, systemd.user);
  return detachedControl({ env: environmentOf(instance.pid), user: userOf(instance.pid) });
}

function systemdControl(unit: string, user: boolean): ServiceControl {
  const systemctl = async (verb: string) => {
    const result = await execa("systemctl", [...(user ? ["--user"] : []), verb, unit], {
      reject: false,
      all: true,
    });
    if (result.exitCode !== 0) {
      throw new UpgradeError(
        "upgrade.systemctl_failed",
        `systemctl ${verb} ${unit} failed (exit ${result.exitCode}): ${(result.all ?? "").trim().slice(0, 1000)} — see journalctl -u ${unit}.`,
      );
    }
  };
  return {
    description: `systemd unit ${unit}`,
    stop: () => systemctl("stop"),
    async start(options) {
      // Type=notify: systemctl start returns once Magpie said READY=1 (or failed).
      await systemctl("start");
      return {
        instance: await waitForInstance(options, (info) => info.pid !== options.previous.pid, null),
        exited: null,
        log: `journalctl -u ${unit}`,
      };
    },
  };
}

function detachedControl(context: ProcessContext): ServiceControl {
  return {
    description: "a detached process",
    async stop(instance) {
      await stopPid(instance.pid);
    },
    async start(options) {
      const { previous } = options;
      mkdirSync(path.dirname(options.logFile), { recursive: true });
      const log = openSync(options.logFile, "a");
      let child: ChildProcess;
      try {
        const asRoot = process.getuid?.() === 0;
        child = spawn(previous.execPath, [options.mainScript, ...previous.argv.slice(1)], {
          cwd: previous.cwd,
          env: context.env ?? process.env,
          detached: true,
          stdio: ["ignore", log, log],
          // Under sudo, the new Magpie runs as the user the old one ran as, never as root.
          ...(asRoot && context.user ? context.user : {}),
        });
      } finally {
        closeSync(log);
      }
      const exited = new Promise<number | null>((resolve) => {
        // Killed by a signal: 128 + its number, as a shell reports it (SIGKILL: 137).
        child.once("exit", (code, signal) =>
          resolve(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : null)),
        );
        child.once("error", () => resolve(null));
      });
      child.unref();
      const pid = child.pid;
      try {
        const instance = await waitForInstance(options, (info) => info.pid === pid, exited);
        return { instance, exited, log: options.logFile };
      } catch (error) {
        if (pid !== undefined) await stopPid(pid, NEVER_UP_WAIT_MS);
        throw error;
      }
    },
  };
}

/** Waits for `<dataDir>/magpie.pid` to name the new process, or fails when it exits first or takes too long. */
async function waitForInstance(
  options: StartOptions,
  isNew: (info: InstanceInfo) => boolean,
  exited: Promise<number | null> | null,
): Promise<InstanceInfo> {
  const deadline = Date.now() + options.timeoutMs;
  let exitCode: number | null | undefined;
  void exited?.then((code) => {
    exitCode = code;
  });
  for (;;) {
    const info = readInstance(options.dataDir);
    if (info && isNew(info) && isAlive(info.pid)) return info;
    if (exitCode !== undefined) {
      throw new UpgradeError("upgrade.start_failed", `It exited (code ${exitCode}) before it was up.`);
    }
    if (Date.now() > deadline) {
      throw new UpgradeError(
        "upgrade.start_timeout",
        `It did not come up within ${Math.round(options.timeoutMs / 1000)} s.`,
      );
    }
    await sleep(100);
  }
}

/** SIGTERM (Magpie finishes or checkpoints its turns and exits within 10 s), SIGKILL if it hangs on. */
export async function stopPid(pid: number, waitMs = STOP_WAIT_MS): Promise<void> {
  if (!signal(pid, "SIGTERM")) return;
  const deadline = Date.now() + waitMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      signal(pid, "SIGKILL");
      await sleep(500);
      return;
    }
    await sleep(100);
  }
}

function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}
