import { readdirSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { sandboxPlan } from "../../src/security/sandbox.js";
import { sanitizedEnv } from "../../src/security/shell-env.js";
import { runProcess } from "../../src/tools/process/run-process.js";
import { hasWorkingSandbox } from "../helpers/requires.js";
import { createToolHarness, errorCode, type ToolHarness } from "./tool-harness.js";

const harnesses: ToolHarness[] = [];
async function harness(options: Parameters<typeof createToolHarness>[0] = {}) {
  const created = await createToolHarness(options);
  harnesses.push(created);
  return created;
}
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((item) => item.cleanup()));
});

/** Sandbox modes the kill tests run in: unsandboxed always, bwrap where it works here. */
const SANDBOX_MODES: Array<"off" | "bwrap"> = (await hasWorkingSandbox()) ? ["off", "bwrap"] : ["off"];

let sleepCounter = 0;
/** A sleep duration nobody else uses (about 30 s), so its processes can be found by command line. */
function uniqueSleep(): string {
  sleepCounter += 1;
  return `30.${process.pid}${String(sleepCounter).padStart(3, "0")}`;
}

/** Host PIDs of live (non-zombie) processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (commandLine.includes(marker) && isAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

/** Running (a killed process waiting to be reaped by init is a zombie: dead for our purposes). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

async function waitUntil(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}

describe("shell", () => {
  it("returns exit code, stdout and stderr separately, in the workspace", async () => {
    const shell = await harness();
    const result = JSON.parse(await shell.call("shell", { command: "echo out; echo err >&2; pwd; exit 3" }));
    expect(result.exit_code).toBe(3);
    expect(result.stdout).toBe(`out\n${shell.workspace}\n`);
    expect(result.stderr).toBe("err\n");
  });

  it("does not leak secrets from the parent environment", async () => {
    const shell = await harness();
    const secrets = {
      MAGPIE_TEST_API_KEY: "sk-leak-canary-0123456789",
      TELEGRAM_BOT_TOKEN: "123:tg-leak-canary",
      AWS_SECRET_ACCESS_KEY: "aws-leak-canary",
      LD_PRELOAD: "/tmp/evil.so",
    };
    Object.assign(process.env, secrets);
    try {
      const result = JSON.parse(
        await shell.call("shell", { command: "env; cat /proc/self/environ | tr '\\0' '\\n'" }),
      );
      for (const [name, value] of Object.entries(secrets)) {
        expect(result.stdout).not.toContain(value);
        expect(result.stdout).not.toContain(`${name}=`);
      }
      const names = (result.stdout as string)
        .split("\n")
        .filter((line) => line.includes("="))
        .map((line) => line.split("=")[0]);
      // Only the safe variables (plus what sh itself sets: PWD, SHLVL, _, OLDPWD).
      const allowed = new Set([
        "PATH",
        "HOME",
        "TERM",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "USER",
        "SHELL",
        "TMPDIR",
        "PWD",
        "SHLVL",
        "_",
        "OLDPWD",
      ]);
      expect(names.filter((name) => !allowed.has(name!))).toEqual([]);
      expect(names).toContain("PATH");
    } finally {
      for (const name of Object.keys(secrets)) delete process.env[name];
    }
  });

  // In the sandbox the command sees its own PID namespace, so the host's /proc is searched for a unique marker.
  describe.each(SANDBOX_MODES)("process group kill (sandbox %s)", (sandbox) => {
    it("kills the whole process group at the timeout (child of the child included)", async () => {
      const shell = await harness({ tools: { shell: { timeoutSecs: 1, sandbox } } });
      const marker = uniqueSleep();
      const started = Date.now();
      // The grandchild ignores SIGTERM, so only a group-wide kill (with SIGKILL follow-up) ends it.
      const text = await shell.call("shell", {
        command: `sh -c 'trap "" TERM; sleep ${marker} & wait' & wait`,
      });
      const elapsed = Date.now() - started;
      expect(errorCode(text)).toBe("shell.timeout");
      expect(text).toContain("timed out after 1000 ms");
      expect(elapsed).toBeLessThan(5000);
      expect(await waitUntil(() => processesWith(marker).length === 0, 3000)).toBe(true);
    });

    it("a background job left behind after the command exits is killed too", async () => {
      const shell = await harness({ tools: { shell: { timeoutSecs: 10, sandbox } } });
      const marker = uniqueSleep();
      const started = Date.now();
      const result = JSON.parse(await shell.call("shell", { command: `sleep ${marker} & echo started` }));
      expect(result.stdout).toBe("started\n");
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await waitUntil(() => processesWith(marker).length === 0, 3000)).toBe(true);
    });

    it("a cancelled turn (abort signal) kills the process group", async () => {
      const marker = uniqueSleep();
      const controller = new AbortController();
      const started = Date.now();
      setTimeout(() => controller.abort(), 300);
      const result = await runProcess({
        file: "/bin/sh",
        args: ["-c", `trap "" TERM; sleep ${marker} & sleep ${marker}`],
        cwd: "/tmp",
        env: sanitizedEnv(),
        timeoutMs: 20_000,
        maxOutputBytes: 1000,
        signal: controller.signal,
        sandbox: sandbox === "off" ? undefined : sandboxPlan(parseConfig({}, { env: {}, cwd: "/tmp" })),
      });
      expect(result.aborted).toBe(true);
      expect(result.timedOut).toBe(false);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await waitUntil(() => processesWith(marker).length === 0, 3000)).toBe(true);
    });
  });

  it("caps output and says how much was dropped", async () => {
    const shell = await harness({ tools: { shell: { maxOutputBytes: 1000 } } });
    const result = JSON.parse(
      await shell.call("shell", {
        command: "head -c 50000 /dev/zero | tr '\\0' a; head -c 3000 /dev/zero | tr '\\0' b >&2",
      }),
    );
    expect(result.stdout).toHaveLength(1000);
    expect(result.stderr).toHaveLength(1000);
    expect(result.truncated).toContain("stdout truncated: 49000 bytes");
    expect(result.truncated).toContain("stderr truncated: 2000 bytes");
    expect(result.exit_code).toBe(0);
  });

  it("keeps cwd inside the allowed paths (also through a symlink)", async () => {
    const shell = await harness();
    await fs.symlink(shell.outside, path.join(shell.workspace, "escape"));
    for (const cwd of ["..", shell.outside, "escape", "/etc", "~"]) {
      expect(errorCode(await shell.call("shell", { command: "touch pwned", cwd })), cwd).toBe(
        "shell.cwd_outside_workspace",
      );
    }
    expect(await fs.readdir(shell.outside)).toEqual([]);
    await fs.mkdir(path.join(shell.workspace, "sub"));
    expect(JSON.parse(await shell.call("shell", { command: "pwd", cwd: "sub" })).stdout.trim()).toBe(
      path.join(shell.workspace, "sub"),
    );
  });

  it("applies allowCommands and denyPatterns", async () => {
    const shell = await harness({
      tools: { shell: { allowCommands: ["echo", "ls"], denyPatterns: ["rm\\s+-rf"] } },
    });
    expect(JSON.parse(await shell.call("shell", { command: "echo ok | ls" })).exit_code).toBe(0);
    for (const command of [
      "curl http://x",
      "echo ok; cat /etc/passwd",
      "echo $(id)",
      "echo `id`",
      "ls && /usr/bin/id",
      "FOO=1 id",
      "echo ok & id",
      "ls <(id)",
      "(id)",
      "echo ok\nid",
    ]) {
      expect(errorCode(await shell.call("shell", { command })), command).toBe("shell.denied");
    }
    const denyOnly = await harness({ tools: { shell: { denyPatterns: ["rm\\s+-rf"] } } });
    const refused = await denyOnly.call("shell", { command: "rm  -rf /tmp/nothing" });
    expect(errorCode(refused)).toBe("shell.denied");
    expect(refused).toContain("tools.shell.denyPatterns");
  });

  it("allowCommands refusals run nothing: no file X appears in the workspace", async () => {
    const shell = await harness({ tools: { shell: { allowCommands: ["echo", "ls"] } } });
    await fs.writeFile(path.join(shell.workspace, "ls"), "#!/bin/sh\ntouch X\n", { mode: 0o755 });
    for (const command of ["2>./ls touch X", "./ls", "PATH=. ls", "echo `touch X`", "env X=1 touch X"]) {
      expect(errorCode(await shell.call("shell", { command })), command).toBe("shell.denied");
    }
    await expect(fs.access(path.join(shell.workspace, "X"))).rejects.toThrow();
    expect(JSON.parse(await shell.call("shell", { command: "ls 2>/dev/null" })).stdout).toContain("ls");
  });

  it("an invalid deny pattern is a config error at startup, not a runtime surprise", () => {
    expect(() =>
      parseConfig({ tools: { shell: { denyPatterns: ["rm (-rf"] } } }, { env: {}, cwd: "/tmp" }),
    ).toThrow(/tools\.shell\.denyPatterns\[0\].*regular expression/);
  });
});
