import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const SIMULATOR = path.join(import.meta.dirname, "fixtures/device-sim.mjs");

/** A simulated board on a real pseudo-terminal: socat links a PTY to the simulator's stdin/stdout. */
export interface PtyDevice {
  /** The PTY path Magpie opens (a symlink to /dev/pts/N). */
  port: string;
  /** Kills socat: the port disappears as if unplugged. */
  unplug(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts socat with the device simulator on the other end and waits for the PTY to appear. */
export async function startPtyDevice(): Promise<PtyDevice> {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-pty-"));
  const port = path.join(dir, "ttyV0");
  const socat: ChildProcess = spawn(
    "socat",
    [`pty,raw,echo=0,link=${port}`, `EXEC:${process.execPath} ${SIMULATOR}`],
    // Its own process group: unplugging kills socat and the simulator together, so the PTY really goes away.
    { stdio: "ignore", detached: true },
  );
  const deadline = Date.now() + 5_000;
  while (!existsSync(port)) {
    if (Date.now() > deadline || socat.exitCode !== null) throw new Error("socat did not create the PTY");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const exited = new Promise<void>((resolve) => socat.once("exit", () => resolve()));
  const unplug = async () => {
    if (socat.exitCode === null && socat.signalCode === null) process.kill(-socat.pid!, "SIGKILL");
    await exited;
  };
  return {
    port,
    unplug,
    async stop() {
      await unplug();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
