import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";

/**
 * The real built CLI (`node dist/bundle/main.js start`) as a child process, SIGKILLed and restarted on the
 * same data directory. Its stdout (JSON log lines) is scanned for the HTTP port, then /readyz is polled.
 */
export class BotProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  starts = 0;
  kills = 0;
  /** stderr of every run (a crash that wasn't ours shows up here). */
  stderr = "";
  /** Log lines at warn and above, for the report when an invariant fails. */
  readonly problems: string[] = [];
  /** The last log lines of the current run (every level), for the report when the exit code isn't 0. */
  readonly tail: string[] = [];

  constructor(
    private readonly cwd: string,
    private readonly configFile: string,
  ) {}

  get running(): boolean {
    return this.child !== null;
  }

  /** Starts the bot and resolves once /readyz answers 200. */
  async start(timeoutMs = 15_000): Promise<void> {
    const child = spawn(process.execPath, [...MAGPIE_NODE_ARGS, "start", "--config", this.configFile], {
      cwd: this.cwd,
      env: { PATH: process.env.PATH, HOME: this.cwd, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    this.starts++;
    this.tail.length = 0;
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    let buffered = "";
    const port = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no http-listening line; stderr: ${this.stderr}`)),
        timeoutMs,
      );
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`the bot exited (${code}) before listening; stderr: ${this.stderr}`));
      });
      child.stdout!.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        let newline = buffered.indexOf("\n");
        while (newline >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          newline = buffered.indexOf("\n");
          this.tail.push(line);
          // MAGPIE_SOAK_LOG=<file> keeps every log line of every run, to diagnose a failed soak afterwards.
          if (process.env.MAGPIE_SOAK_LOG)
            appendFileSync(process.env.MAGPIE_SOAK_LOG, `${this.starts} ${line}\n`);
          if (this.tail.length > 60) this.tail.shift();
          const listening = /"port":(\d+)[^\n]*"msg":"http-listening"/.exec(line);
          if (listening) {
            clearTimeout(timer);
            resolve(Number(listening[1]));
          }
          const level = /"level":(\d+)/.exec(line);
          if (level && Number(level[1]) >= 40) this.problems.push(line);
        }
      });
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    const listeningPort = await port;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${listeningPort}/readyz`).catch(() => null);
      if (ready?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`/readyz never turned 200 (last ${ready?.status})`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** SIGKILL: no shutdown hooks, no flush — a power cut as far as the database is concerned. */
  async kill(): Promise<void> {
    if (!this.child) return;
    this.child.kill("SIGKILL");
    await this.exited;
    this.child = null;
    this.kills++;
  }

  /** SIGTERM and the exit code (0 expected within 10 s). */
  async stop(): Promise<number | null> {
    if (!this.child) return null;
    this.child.kill("SIGTERM");
    const code = await this.exited;
    this.child = null;
    if (code !== 0)
      console.error(`the bot exited ${code} after SIGTERM; its last log lines:\n${this.tail.join("\n")}`);
    return code;
  }
}
