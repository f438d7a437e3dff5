import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { InstanceInfo } from "../../src/upgrade/instance.js";
import { isAlive } from "../../src/upgrade/process-info.js";
import { serviceControlFor, stopPid, unitFromCgroup } from "../../src/upgrade/service.js";
import { UpgradeError } from "../../src/upgrade/upgrade-error.js";

/**
 * How upgrade stops and starts Magpie. Under systemd: `systemctl stop|start <unit>` (a `systemctl` stand-in on
 * PATH records the calls and plays the unit: it writes a new magpie.pid on start). Otherwise: SIGTERM.
 */

let dir: string;
let dataDir: string;
let children: ChildProcess[] = [];
const saved = { PATH: process.env.PATH, MAGPIE_SYSTEMD_UNIT: process.env.MAGPIE_SYSTEMD_UNIT };

const info = (pid: number): InstanceInfo => ({
  pid,
  startedAt: new Date().toISOString(),
  mode: "start",
  version: "0.1.0",
  http: null,
  configPath: null,
  execPath: process.execPath,
  argv: ["/opt/magpie/dist/bundle/main.js", "start"],
  cwd: dir,
});

function sleeper(): ChildProcess {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  children.push(child);
  return child;
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "magpie-service-"));
  dataDir = path.join(dir, "data");
  mkdirSync(dataDir);
  children = [];
});
afterEach(() => {
  for (const child of children) child.kill("SIGKILL");
  process.env.PATH = saved.PATH;
  if (saved.MAGPIE_SYSTEMD_UNIT === undefined) delete process.env.MAGPIE_SYSTEMD_UNIT;
  else process.env.MAGPIE_SYSTEMD_UNIT = saved.MAGPIE_SYSTEMD_UNIT;
  rmSync(dir, { recursive: true, force: true });
});

describe("unitFromCgroup", () => {
  it("finds a system or user service, and nothing for a login session, the user manager or a container", () => {
    expect(unitFromCgroup("0::/system.slice/magpie.service\n")).toEqual({
      unit: "magpie.service",
      user: false,
    });
    expect(unitFromCgroup("12:pids:/\n1:name=systemd:/system.slice/magpie.service\n")).toEqual({
      unit: "magpie.service",
      user: false,
    });
    expect(
      unitFromCgroup("0::/user.slice/user-1000.slice/user@1000.service/app.slice/magpie.service\n"),
    ).toEqual({ unit: "magpie.service", user: true });
    expect(unitFromCgroup("0::/user.slice/user-1000.slice/session-3.scope\n")).toBeNull();
    expect(unitFromCgroup("0::/user.slice/user-1000.slice/user@1000.service\n")).toBeNull();
    expect(unitFromCgroup("0::/\n")).toBeNull();
    expect(unitFromCgroup("0::/docker/4f3e2a\n")).toBeNull();
  });
});

describe("under systemd", () => {
  function fakeSystemctl(exitCode = 0): string {
    const bin = path.join(dir, "bin");
    mkdirSync(bin);
    const calls = path.join(dir, "calls");
    // `start` plays the unit: a new process, named in magpie.pid as Magpie would.
    writeFileSync(
      path.join(bin, "systemctl"),
      `#!/bin/sh
echo "$*" >> ${calls}
if [ "$1" = "start" ]; then
  sleep 30 >/dev/null 2>&1 &
  printf '{"pid": %s, "startedAt": "now", "mode": "start", "version": "0.2.0", "http": null, "configPath": null, "execPath": "node", "argv": ["main.js"], "cwd": "/"}' $! > ${dataDir}/magpie.pid
fi
[ ${exitCode} -eq 0 ] || echo "Job for magpie.service failed." >&2
exit ${exitCode}
`,
    );
    chmodSync(path.join(bin, "systemctl"), 0o755);
    process.env.PATH = `${bin}:${saved.PATH}`;
    process.env.MAGPIE_SYSTEMD_UNIT = "magpie.service";
    return calls;
  }

  it("stops and starts the unit with systemctl; the new instance is the pid the unit's Magpie wrote", async () => {
    const calls = fakeSystemctl();
    const control = serviceControlFor(info(process.pid));
    expect(control.description).toBe("systemd unit magpie.service");
    await control.stop(info(process.pid));
    const started = await control.start({
      previous: info(process.pid),
      mainScript: "/opt/magpie/dist/bundle/main.js",
      dataDir,
      logFile: path.join(dataDir, "logs", "x.log"),
      timeoutMs: 10_000,
    });
    expect(readFileSync(calls, "utf8")).toBe("stop magpie.service\nstart magpie.service\n");
    expect(started.instance.version).toBe("0.2.0");
    expect(isAlive(started.instance.pid)).toBe(true);
    expect(started.log).toBe("journalctl -u magpie.service");
    process.kill(started.instance.pid, "SIGKILL");
  });

  it("a failing systemctl is an UpgradeError naming the unit and journalctl", async () => {
    fakeSystemctl(1);
    const control = serviceControlFor(info(process.pid));
    const error = await control.stop(info(process.pid)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UpgradeError);
    expect((error as UpgradeError).message).toMatch(
      /systemctl stop magpie\.service failed \(exit 1\): Job for magpie\.service failed\. — see journalctl -u magpie\.service/,
    );
  });
});

describe("outside systemd", () => {
  it("stops the pid with SIGTERM and waits until it is gone", async () => {
    const child = sleeper();
    const exited = new Promise((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    await stopPid(child.pid!);
    expect(await exited).toBe("SIGTERM");
    expect(isAlive(child.pid!)).toBe(false);
  });

  it("starts the release detached with the old argv, cwd and environment; one that exits at once fails fast", async () => {
    const old = sleeper();
    const control = serviceControlFor(info(old.pid!));
    expect(control.description).toBe("a detached process");
    const script = path.join(dir, "main.js");
    writeFileSync(
      script,
      'console.error("boom at load", process.argv.slice(2).join(" ")); process.exit(3);\n',
    );
    const started = Date.now();
    const error = await control
      .start({
        previous: info(old.pid!),
        mainScript: script,
        dataDir,
        logFile: path.join(dataDir, "logs", "magpie-abc.log"),
        timeoutMs: 30_000,
      })
      .catch((caught: unknown) => caught);
    expect((error as UpgradeError).message).toBe("It exited (code 3) before it was up.");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(readFileSync(path.join(dataDir, "logs", "magpie-abc.log"), "utf8")).toBe("boom at load start\n");
  });
});
