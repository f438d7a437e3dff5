import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir, userInfo } from "node:os";
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

/** True when brokers with users can be started too (`mosquitto_passwd` comes with mosquitto). */
export function hasMosquittoWithUsers(): boolean {
  return hasMosquitto() && hasPrograms("mosquitto_passwd");
}

export interface Mosquitto {
  url: string;
  port: number;
  /** What the broker logged so far (with `log: true`): connections with their user names, subscriptions. */
  log(): string;
  stop(): Promise<void>;
}

export interface MosquittoOptions {
  /** Restart a broker on its port. */
  port?: number;
  /** Only these users may connect (user → password, through a mosquitto_passwd file); anonymous ones are refused. */
  users?: Record<string, string>;
  /** Log every connection attempt, login and subscription to a file `log()` reads. */
  log?: boolean;
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

/**
 * A real broker on a free port of 127.0.0.1 (or `port`, to restart one) with a config file of its own (anonymous
 * unless `users` are given, no persistence).
 */
export async function startMosquitto(onPort?: number | MosquittoOptions): Promise<Mosquitto> {
  const options: MosquittoOptions = typeof onPort === "number" ? { port: onPort } : (onPort ?? {});
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-mosquitto-"));
  const port = options.port ?? (await freePort());
  const config = path.join(dir, "mosquitto.conf");
  const passwords = path.join(dir, "passwords");
  const logFile = path.join(dir, "mosquitto.log");
  const users = Object.entries(options.users ?? {});
  if (users.length > 0) {
    writeFileSync(passwords, "");
    for (const [user, password] of users)
      execFileSync("mosquitto_passwd", ["-b", passwords, user, password], { stdio: "ignore" });
  }
  writeFileSync(
    config,
    [
      `listener ${port} 127.0.0.1`,
      // Started as root, mosquitto switches to its own user, which can't read this directory; as anyone else the
      // line does nothing.
      `user ${userInfo().username}`,
      ...(users.length > 0
        ? ["allow_anonymous false", `password_file ${passwords}`]
        : ["allow_anonymous true"]),
      "persistence false",
      "max_queued_messages 100000",
      ...(options.log
        ? [`log_dest file ${logFile}`, "log_type all", "connection_messages true"]
        : ["log_dest none"]),
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
    log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
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
