import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { hasPrograms } from "./helpers/requires.js";

const UNIT = readFileSync("deploy/magpie.service", "utf8");

/** `Key=value` lines of the unit (comments and sections left out). */
function directives(unit: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of unit.split("\n")) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (match) out.set(match[1]!, [...(out.get(match[1]!) ?? []), match[2]!]);
  }
  return out;
}

describe("deploy/magpie.service", () => {
  const keys = directives(UNIT);

  it("hardens the service: no new privileges, read-only system with the data directory writable", () => {
    expect(keys.get("NoNewPrivileges")).toEqual(["yes"]);
    expect(keys.get("ProtectSystem")).toEqual(["strict"]);
    expect(keys.get("ReadWritePaths")).toEqual(["/var/lib/magpie"]);
    expect(keys.get("CapabilityBoundingSet")).toEqual([""]);
    expect(keys.get("ExecStart")?.[0]).toMatch(/dist\/bundle\/main\.js start$/);
    expect(UNIT).toMatch(/^#SupplementaryGroups=gpio i2c spi dialout$/m);
    // SIGTERM → Magpie exits within 10 s; systemd must wait longer than that.
    expect(Number(keys.get("TimeoutStopSec")?.[0])).toBeGreaterThan(10);
  });

  it("is Type=notify with a watchdog: systemd restarts a process whose event loop is stuck", () => {
    expect(keys.get("Type")).toEqual(["notify"]);
    // The notifications come from the systemd-notify program, a child of the main process.
    expect(keys.get("NotifyAccess")).toEqual(["all"]);
    const watchdogSec = Number(keys.get("WatchdogSec")?.[0]);
    // Longer than /healthz's 5 s limit (a hiccup is reported, not punished with a restart), short enough to matter.
    expect(watchdogSec).toBeGreaterThan(5);
    expect(watchdogSec).toBeLessThanOrEqual(60);
    expect(keys.get("Restart")).toEqual(["always"]);
    // Start-up must reach READY=1 before systemd gives up on it.
    expect(Number(keys.get("TimeoutStartSec")?.[0])).toBeGreaterThanOrEqual(30);
  });

  it("leaves off every option that breaks bubblewrap, Node's JIT or hardware devices", () => {
    for (const key of [
      "ProtectKernelTunables",
      "ProtectKernelLogs",
      "ProtectProc",
      "ProcSubset",
      "PrivateUsers",
      "MemoryDenyWriteExecute",
      "PrivateDevices",
      "ProtectClock",
      "DeviceAllow",
    ]) {
      expect(keys.has(key), key).toBe(false);
    }
    // bwrap's namespaces stay allowed; its mount and pivot_root calls pass the syscall filter.
    expect(keys.get("RestrictNamespaces")?.[0]?.split(" ").sort()).toEqual([
      "ipc",
      "mnt",
      "net",
      "pid",
      "user",
    ]);
    expect(keys.get("SystemCallFilter")).toEqual(["@system-service @mount"]);
    expect(keys.get("RestrictAddressFamilies")?.[0]).toContain("AF_NETLINK");
  });

  it.runIf(hasPrograms("systemd-analyze"))("systemd-analyze verify finds no unknown or bad keys", () => {
    const directory = mkdtempSync(path.join(tmpdir(), "magpie-unit-"));
    const file = path.join(directory, "magpie.service");
    // verify checks that ExecStart's program exists: point it at this checkout.
    writeFileSync(
      file,
      UNIT.replace("/usr/bin/node /opt/magpie", `${process.execPath} ${process.cwd()}`).replace(
        "WorkingDirectory=/opt/magpie",
        `WorkingDirectory=${process.cwd()}`,
      ),
    );
    const result = spawnSync("systemd-analyze", ["verify", file], { encoding: "utf8" });
    expect(result.stderr.trim()).toBe("");
    expect(result.status).toBe(0);
  });

  // Only root can drop to another user; not being root is no missing program.
  it.runIf(process.getuid?.() === 0 && hasPrograms("setpriv", "bwrap"))(
    "bubblewrap still works as an unprivileged user with no new privileges and an empty bounding set",
    () => {
      expect(existsSync("/proc/self")).toBe(true);
      const result = spawnSync(
        "setpriv",
        [
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          "--no-new-privs",
          "--bounding-set",
          "-all",
          "--",
          "bwrap",
          ...["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--unshare-ipc"],
          ...["--unshare-net", "--die-with-parent", "--new-session", "/bin/sh", "-c", "echo sandboxed"],
        ],
        { encoding: "utf8" },
      );
      expect(result.stderr).toBe("");
      expect(result.stdout).toBe("sandboxed\n");
    },
  );
});
