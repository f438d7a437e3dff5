import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { hasPrograms } from "../helpers/requires.js";

/** Debian installs the broker in /usr/sbin, which a non-root PATH may lack. */
function withSbinOnPath(): void {
  const dirs = (process.env.PATH ?? "").split(path.delimiter);
  if (!dirs.includes("/usr/sbin") && existsSync("/usr/sbin/mosquitto"))
    process.env.PATH = [...dirs, "/usr/sbin"].join(path.delimiter);
}

/** True when `mosquitto` can run here (skipped with the reason otherwise; a failure under CI). */
export function hasMosquitto(): boolean {
  withSbinOnPath();
  return hasPrograms("mosquitto");
}

export interface Mosquitto {
  url: string;
  port: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** A real broker on a free port of 127.0.0.1 (or `onPort`, to restart one) with a config file of its own (anonymous, no persistence). */
export async function startMosquitto(onPort?: number): Promise<Mosquitto> {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-mosquitto-"));
  const port = onPort ?? (await freePort());
  const config = path.join(dir, "mosquitto.conf");
  writeFileSync(
    config,
    [
      `listener ${port} 127.0.0.1`,
      "allow_anonymous true",
      "persistence false",
      "max_queued_messages 100000",
      "log_dest none",
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn("mosquitto", ["-c", config], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const deadline = Date.now() + 10_000;
  while (!(await accepting(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill();
      throw new Error(`mosquitto did not start on ${port}: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    url: `mqtt://127.0.0.1:${port}`,
    port,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
