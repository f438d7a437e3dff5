import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { notifySockets, sandboxArgv, sandboxPlan } from "../../src/security/sandbox.js";
import { hasPrograms, hasWorkingSandbox } from "../helpers/requires.js";

const sandboxWorks = (await hasWorkingSandbox()) && hasPrograms("python3", "systemd-notify");

/** Prints each datagram on a line (JSON), after `LISTENING`. */
const LISTENER = `
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("LISTENING", flush=True)
while True:
    data, _, _, _ = s.recvmsg(4096)
    print(json.dumps(data.decode()), flush=True)
`;

describe("the sandbox and systemd's notify socket", () => {
  it("every sandbox plan covers the system and user managers' notify sockets", () => {
    const plan = sandboxPlan(parseConfig({}, { env: {}, cwd: "/tmp" }));
    expect(notifySockets(1000)).toEqual(["/run/systemd/notify", "/run/user/1000/systemd/notify"]);
    for (const socket of notifySockets()) expect(plan.hidden).toContain(socket);
  });

  describe.runIf(sandboxWorks)(
    "a sandboxed command sending WATCHDOG=trigger (under NotifyAccess=all: a restart)",
    () => {
      const cleanup: Array<() => void> = [];
      afterEach(() => {
        for (const step of cleanup.splice(0)) step();
      });

      /** A stand-in notify socket outside /tmp (the sandbox hides /tmp anyway) and what it received. */
      async function listen(): Promise<{ socket: string; messages: string[]; root: string }> {
        const root = mkdtempSync("/var/tmp/magpie-notify-");
        cleanup.push(() => rmSync(root, { recursive: true, force: true }));
        const socket = path.join(root, "notify");
        const listener: ChildProcess = spawn("python3", ["-c", LISTENER, socket], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        cleanup.push(() => listener.kill("SIGKILL"));
        const messages: string[] = [];
        await new Promise<void>((resolve) => {
          listener.stdout!.on("data", (chunk: Buffer) => {
            for (const line of chunk.toString().split("\n").filter(Boolean)) {
              if (line === "LISTENING") resolve();
              else messages.push(JSON.parse(line) as string);
            }
          });
        });
        return { socket, messages, root };
      }

      async function attack(socket: string, root: string, hidden: string[]): Promise<number | null> {
        const workspace = path.join(root, "workspace");
        mkdirSync(workspace, { recursive: true });
        const config = parseConfig({ dataDir: path.join(root, "data") }, { env: {}, cwd: root });
        const plan = sandboxPlan(config, path.join(root, "home"), hidden);
        // What a prompt-injected shell command could run: the socket's path is no secret.
        const argv = sandboxArgv(plan, workspace, [
          "env",
          `NOTIFY_SOCKET=${socket}`,
          "systemd-notify",
          "WATCHDOG=trigger",
        ]);
        const child = spawn("bwrap", argv, { stdio: "ignore" });
        return new Promise((resolve) => child.on("exit", resolve));
      }

      it("reaches an uncovered socket (why the cover is needed) but not a covered one", async () => {
        const open = await listen();
        expect(await attack(open.socket, open.root, [])).toBe(0);
        await expect.poll(() => open.messages).toContain("WATCHDOG=trigger");

        const covered = await listen();
        expect(await attack(covered.socket, covered.root, [covered.socket])).not.toBe(0);
        // Give a stray datagram time to arrive: none does.
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(covered.messages).toEqual([]);
      });
    },
  );
});
