#!/usr/bin/env node
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import type { MagpieConfig } from "../config/schema.js";
import { ConfigError } from "../lib/errors.js";
import { magpieVersion } from "../lib/manifest.js";
import type { CliCommand, CliEnv } from "./cli-env.js";
import { terminalOutput } from "./terminal-output.js";

/**
 * A heap that stays near what it holds (issue 37). V8 grows its young generation from 1 MiB to 16 MiB × 2 under a
 * burst of messages and its old generation up to 4× what survives a collection, and keeps both until the box has
 * been idle a while: the RSS step from ~110 to ~230 MiB under load, with 30–40 MiB of live heap. Set at run time,
 * `--max-semi-space-size` has no effect (V8 fixes the young generation's limit when the heap is set up; measured:
 * still 32 MiB), so the young generation is kept at its first size by not growing it, and the old generation may
 * grow 20 % past what survives. Measured (`npm run bench -- history`, the memory soak): RSS under load ×1.2–1.4
 * of idle instead of ×1.9–2.2, at no measurable cost in CPU per message. Flags given to node win.
 */
const NODE_FLAGS = `${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`;
if (!NODE_FLAGS.includes("semi-space")) v8.setFlagsFromString("--semi-space-growth-factor=1");
if (!NODE_FLAGS.includes("heap-growing-percent")) v8.setFlagsFromString("--heap-growing-percent=20");

const USAGE = `Usage: magpie [command] [--config <path>]

Commands:
  start                 run Magpie in the foreground (default)
  chat                  chat with Magpie in this terminal
  config check          validate the configuration and exit
  doctor                check config, database, LLM, channel tokens, hardware (✓/✗ with fixes)
  pair list|approve     pending pairing codes; approve <channel> <code>
  memory search|add|forget|list|export
  cron list|add|remove|run|runs
  send <channel> <chatId> <text>   deliver a message through the outbox
  usage [--since <date>] [--json]  LLM usage and cost by model and by origin
  trace <message>|--chat <channel>:<chatId> [--json]
                        a message's life: access, turn, LLM and tool calls, delivery, outcome
                        (<message>: inbox id, <channel>:<chatId>:<messageId> or last)
  backup [--to <file>]  copy the database while Magpie runs (SQLite online backup)
  restore <file>        put a backup back (Magpie must be stopped; the current database is kept aside)
  upgrade [--to <version or git ref>]
                        install a new release beside this one; roll back if it doesn't answer
  reload                re-read the config file in the running Magpie (also SIGHUP)
  skills list|approve <name>
                        skills and their approval state (skills.requireApproval)
  version               print the version (also --version)
  help                  show this text (also --help)
`;

/** The command line split into the global options, the command and the command's own arguments. */
interface CommandLine {
  configPath?: string;
  help: boolean;
  version: boolean;
  command: string;
  rest: string[];
  /** A flag that no one takes (before the command, or after `start`/`chat`). */
  unknownFlag?: string;
}

/**
 * Global options (`--config`, `--help`, `--version`) may come before or after the command; anything else
 * before the command is an unknown flag. After the command, the arguments belong to the command, except
 * `--config` which is taken out (sub-commands parse their own options strictly).
 */
function parseCommandLine(argv: string[]): CommandLine {
  const line: CommandLine = { help: false, version: false, command: "", rest: [] };
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    if (arg === "--config" || arg === "-c") {
      line.configPath = argv[++index];
      if (line.configPath === undefined) line.unknownFlag ??= `${arg} needs a path`;
    } else if (arg.startsWith("--config=")) line.configPath = arg.slice("--config=".length);
    else if (!line.command && (arg === "--help" || arg === "-h")) line.help = true;
    else if (!line.command && (arg === "--version" || arg === "-v" || arg === "-V")) line.version = true;
    else if (!line.command && arg.startsWith("-")) line.unknownFlag ??= arg;
    else if (!line.command) line.command = arg;
    else line.rest.push(arg);
  }
  if (!line.command) line.command = "start";
  return line;
}

/** Everything the CLI prints goes through these (terminal-output.ts): nothing printed can act on the terminal. */
const stdout = terminalOutput(process.stdout);
const stderr = terminalOutput(process.stderr);

async function main(argv: string[]): Promise<number> {
  const line = parseCommandLine(argv);
  const { configPath, command, rest } = line;
  if (line.unknownFlag) {
    stderr.write(`Unknown option "${line.unknownFlag}".\n\n${USAGE}`);
    return 2;
  }
  if (line.version || command === "version") {
    if (command !== "version" && command !== "start") return usageError(`"${command}" takes no --version.`);
    if (command === "version" && rest.length > 0) return usageError(`Unknown argument "${rest[0]}".`);
    stdout.write(`magpie ${magpieVersion()}\n`);
    return 0;
  }
  if (line.help || command === "help") {
    stdout.write(USAGE);
    return 0;
  }
  if ((command === "start" || command === "chat") && rest.length > 0) {
    if (rest.every((arg) => arg === "--help" || arg === "-h")) {
      stdout.write(USAGE);
      return 0;
    }
    return usageError(
      `Unknown ${rest[0]!.startsWith("-") ? "option" : "argument"} "${rest[0]}" for ${command}.`,
    );
  }
  // Loaded only now: `--version`, `--help` and usage errors need neither zod, YAML nor SQLite.
  const [{ loadConfig }, { Store }] = await Promise.all([
    import("../config/load.js"),
    import("../store/index.js"),
  ]);
  const env: CliEnv = {
    loadConfig: () => loadConfig({ configPath }),
    openStore: (config: MagpieConfig) => Store.open(config.dataDir),
    stdout,
    stderr,
  };
  try {
    switch (command) {
      case "start":
        return await (await import("./start.js")).runStart({ env, mode: "start", version: magpieVersion() });
      case "chat":
        return await (await import("./start.js")).runStart({ env, mode: "chat", version: magpieVersion() });
      case "config":
        return await (await import("./config-check.js")).runConfigCommand(rest, env);
      default: {
        const module = await loadSubcommand(command);
        if (!module) return usageError(`Unknown command "${command}".`);
        return await module(rest, env);
      }
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      stderr.write(`${error.message}\n`);
      return 1;
    }
    stderr.write(`magpie ${command}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function usageError(problem: string): number {
  stderr.write(`${problem}\n\n${USAGE}`);
  return 2;
}

/**
 * Sub-commands live in src/cli/commands/<name>.ts and export `run`. Listed with literal import paths so the
 * production bundle (scripts/bundle.mjs) can see them; each loads only when its command runs.
 */
const SUBCOMMANDS: Record<string, () => Promise<{ run: CliCommand }>> = {
  backup: () => import("./commands/backup.js"),
  cron: () => import("./commands/cron.js"),
  doctor: () => import("./commands/doctor.js"),
  memory: () => import("./commands/memory.js"),
  pair: () => import("./commands/pair.js"),
  reload: () => import("./commands/reload.js"),
  restore: () => import("./commands/restore.js"),
  selftest: () => import("./commands/selftest.js"),
  send: () => import("./commands/send.js"),
  skills: () => import("./commands/skills.js"),
  trace: () => import("./commands/trace.js"),
  upgrade: () => import("./commands/upgrade.js"),
  usage: () => import("./commands/usage.js"),
};

async function loadSubcommand(name: string): Promise<CliCommand | null> {
  const load = Object.hasOwn(SUBCOMMANDS, name) ? SUBCOMMANDS[name] : undefined;
  return load ? (await load()).run : null;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
