import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface ShippedBotOptions {
  /** The YAML config (written as JSON, which is YAML); `dataDir`, `workspace` and `http` are filled in. */
  config: Record<string, unknown>;
  /** Extra environment for the process (PATH and HOME are always set). */
  env?: Record<string, string>;
  /** Extra files to write into the bot's directory before it starts (relative path → content). */
  files?: Record<string, string>;
}

/**
 * The product as users run it: `node dist/bundle/main.js start` as a child process with a config file, in a
 * directory of its own (data/, workspace/), HOME pointing there. Its JSON log lines are kept; `cli()` runs
 * another sub-command (doctor, backup, usage …) of the same build against the same config.
 */
export class ShippedBot {
  readonly dir: string;
  readonly configFile: string;
  readonly dataDir: string;
  readonly workspace: string;
  /** Every JSON log line the process printed. */
  readonly logLines: string[] = [];
  stderr = "";
  port = 0;
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);

  private constructor(private readonly options: ShippedBotOptions) {
    this.dir = mkdtempSync(path.join(tmpdir(), "magpie-shipped-"));
    this.dataDir = path.join(this.dir, "data");
    this.workspace = path.join(this.dir, "workspace");
    mkdirSync(this.workspace, { recursive: true });
    this.configFile = path.join(this.dir, "magpie.yaml");
    for (const [file, content] of Object.entries(options.files ?? {})) {
      mkdirSync(path.dirname(path.join(this.dir, file)), { recursive: true });
      writeFileSync(path.join(this.dir, file), content);
    }
    writeFileSync(
      this.configFile,
      JSON.stringify(
        {
          dataDir: this.dataDir,
          workspace: this.workspace,
          ...options.config,
          http: { host: "127.0.0.1", port: 0, ...(options.config.http as object | undefined) },
        },
        null,
        2,
      ),
    );
  }

  /** Writes the config and starts the bot; resolves once /readyz answers 200. */
  static async start(options: ShippedBotOptions, timeoutMs = 20_000): Promise<ShippedBot> {
    const bot = new ShippedBot(options);
    try {
      await bot.launch(timeoutMs);
    } catch (error) {
      await bot.dispose();
      throw error;
    }
    return bot;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The environment every process of this bot gets: nothing from the test runner but PATH. */
  environment(): NodeJS.ProcessEnv {
    return { PATH: process.env.PATH, HOME: this.dir, LOG_LEVEL: "info", ...this.options.env };
  }

  private async launch(timeoutMs: number): Promise<void> {
    const child = spawn(process.execPath, [...MAGPIE_NODE_ARGS, "start", "--config", this.configFile], {
      cwd: this.dir,
      env: this.environment(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    let buffered = "";
    const port = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no http-listening line; stderr: ${this.stderr}`)),
        timeoutMs,
      );
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(
          new Error(`the bot exited (${code}) before listening; stderr: ${this.stderr}\n${this.logText()}`),
        );
      });
      child.stdout!.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        let newline = buffered.indexOf("\n");
        while (newline >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          newline = buffered.indexOf("\n");
          this.logLines.push(line);
          if (line.includes('"msg":"http-listening"')) {
            clearTimeout(timer);
            resolve(Number(/"port":(\d+)/.exec(line)?.[1]));
          }
        }
      });
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.port = await port;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ready = await fetch(`${this.url}/readyz`).catch(() => null);
      if (ready?.status === 200) return;
      if (Date.now() > deadline) {
        throw new Error(
          `/readyz never turned 200 (last ${ready?.status}: ${await ready?.text()})\n${this.logText()}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** The log so far, for failure messages. */
  logText(): string {
    return this.logLines.slice(-60).join("\n");
  }

  /** Log lines whose `msg` is `message`, parsed. */
  logsOf(message: string): Array<Record<string, unknown>> {
    return this.logLines
      .filter((line) => line.includes(`"msg":"${message}"`))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** Runs `magpie <args> --config <this config>` with the same build, directory and environment. */
  cli(args: string[], options: { input?: string; timeoutMs?: number } = {}): Promise<CliResult> {
    return runShippedCli([...args, "--config", this.configFile], {
      cwd: this.dir,
      env: this.environment(),
      ...options,
    });
  }

  /** Stops the bot and starts it again on the same directory and config (`whileStopped` runs in between). */
  async restart(options: { whileStopped?: () => Promise<void>; timeoutMs?: number } = {}): Promise<void> {
    await this.stop();
    await options.whileStopped?.();
    await this.launch(options.timeoutMs ?? 20_000);
  }

  /** Starts the bot again after `stop()`: the same directory, config and environment. */
  async relaunch(timeoutMs = 20_000): Promise<void> {
    await this.launch(timeoutMs);
  }

  /** SIGTERM, then waits for the exit code. */
  async stop(): Promise<number | null> {
    const child = this.child;
    this.child = null;
    if (!child) return null;
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    const code = await this.exited;
    clearTimeout(killer);
    return code;
  }

  /** SIGKILL: no shutdown, no flush — a crash as far as the database is concerned; `relaunch()` starts it again. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child) return;
    child.kill("SIGKILL");
    await this.exited;
  }

  /** Stops the bot and removes its directory. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs the shipped CLI once (`node dist/bundle/main.js …`) and collects its output. */
export function runShippedCli(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string; timeoutMs?: number },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...MAGPIE_NODE_ARGS, ...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`magpie ${args.join(" ")} did not finish; stdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
}
