import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { type SystemdNotifier, startSystemdNotify } from "../../src/app/systemd-notify.js";
import { silentLogger } from "../../src/log/logger.js";

/** A stand-in for systemd-notify that appends `<NOTIFY_SOCKET> <arguments…>` to a file, one call a line. */
function fakeProgram(): { program: string; calls: () => string[] } {
  const directory = mkdtempSync(path.join(tmpdir(), "magpie-sd-notify-"));
  const program = path.join(directory, "systemd-notify");
  const log = path.join(directory, "calls");
  writeFileSync(program, `#!/bin/sh\necho "$NOTIFY_SOCKET" "$@" >> ${log}\n`);
  chmodSync(program, 0o755);
  return {
    program,
    calls: () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : []),
  };
}

async function until(what: string, probe: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("startSystemdNotify", () => {
  let notifier: SystemdNotifier | null = null;
  afterEach(() => notifier?.close());

  it("does nothing without NOTIFY_SOCKET", () => {
    expect(startSystemdNotify({ logger: silentLogger(), env: { WATCHDOG_USEC: "1000" } })).toBeNull();
  });

  it("takes the socket out of the environment, so no child process can speak for Magpie", async () => {
    const fake = fakeProgram();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      NOTIFY_SOCKET: "/run/notify",
      WATCHDOG_USEC: "60000000",
    };
    notifier = startSystemdNotify({ logger: silentLogger(), env, program: fake.program });
    expect(env.NOTIFY_SOCKET).toBeUndefined();
    expect(env.WATCHDOG_USEC).toBeUndefined();
    // Only the notify program gets it, explicitly.
    await until("the first ping", () => fake.calls().length === 1);
    expect(fake.calls()).toEqual(["/run/notify WATCHDOG=1"]);
  });

  it("pings at half the watchdog interval; READY=1 waits for readiness; STOPPING=1", async () => {
    const fake = fakeProgram();
    const env = { NOTIFY_SOCKET: "/run/notify", WATCHDOG_USEC: "100000" };
    notifier = startSystemdNotify({ logger: silentLogger(), env, program: fake.program });
    await until("pings", () => fake.calls().length >= 3);
    let ready = false;
    notifier!.ready(() => ready, "Ready");
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(fake.calls().some((call) => call.includes("READY=1"))).toBe(false);
    ready = true;
    await until("READY=1", () => fake.calls().includes("/run/notify READY=1 STATUS=Ready"));
    notifier!.stopping();
    await until("STOPPING=1", () => fake.calls().some((call) => call.includes("STOPPING=1")));
    notifier!.close();
    // A ping launched just before close may still write its line (a child process on a loaded box): wait until
    // the file is quiet for 150 ms — three watchdog intervals — which it never is while pings go on.
    let count = fake.calls().length;
    let quietSince = Date.now();
    await until("no more pings", () => {
      const now = fake.calls().length;
      if (now !== count) [count, quietSince] = [now, Date.now()];
      return Date.now() - quietSince >= 150;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(fake.calls().length).toBe(count);
    expect(fake.calls().filter((call) => call.includes("READY=1"))).toHaveLength(1);
  });

  it("a watchdog meant for another process (WATCHDOG_PID) is not fed", async () => {
    const fake = fakeProgram();
    const env = {
      NOTIFY_SOCKET: "/run/notify",
      WATCHDOG_USEC: "20000",
      WATCHDOG_PID: String(process.pid + 1),
    };
    notifier = startSystemdNotify({ logger: silentLogger(), env, program: fake.program });
    notifier!.ready(() => true, "Ready");
    await until("READY=1", () => fake.calls().length === 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(fake.calls()).toEqual(["/run/notify READY=1 STATUS=Ready"]);
  });

  it("a missing systemd-notify is logged once, with the fix", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const env = { NOTIFY_SOCKET: "/run/notify", WATCHDOG_USEC: "20000" };
    notifier = startSystemdNotify({ logger, env, program: "/nonexistent/systemd-notify" });
    await until("the error", () => lines.some((line) => line.includes('"level":50')));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const errors = lines.filter((line) => line.includes('"level":50'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("Type=simple without WatchdogSec");
  });
});
