#!/usr/bin/env node
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig } from "../config/load.js";
import type { MagpieConfig } from "../config/schema.js";
import { ConfigError } from "../core/errors.js";
import { Store } from "../store/index.js";
import type { CliCommand, CliEnv } from "./cli-env.js";

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
  help                  show this text
`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { config: { type: "string", short: "c" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
    strict: false,
  });
  const configPath = typeof values.config === "string" ? values.config : undefined;
  const [command = "start", ...rest] = positionals;
  if (values.help || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  const env: CliEnv = {
    loadConfig: () => loadConfig({ configPath }),
    openStore: (config: MagpieConfig) => Store.open(config.dataDir),
    stdout: process.stdout,
    stderr: process.stderr,
  };
  try {
    switch (command) {
      case "start":
        return await (await import("./start.js")).runStart({ env, mode: "start" });
      case "chat":
        return await (await import("./start.js")).runStart({ env, mode: "chat" });
      case "config":
        return await (await import("./config-check.js")).runConfigCommand(rest, env);
      default: {
        const module = await loadSubcommand(command);
        if (!module) {
          process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
          return 2;
        }
        return await module(subcommandArgs(argv, command), env);
      }
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    process.stderr.write(`magpie ${command}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

/**
 * The arguments after the sub-command's name, options included (the top-level parse is not strict, so it
 * would turn `--limit 5` into a flag and a positional); only the global `--config` is taken out.
 */
function subcommandArgs(argv: string[], command: string): string[] {
  const after = argv.slice(argv.indexOf(command) + 1);
  const out: string[] = [];
  for (let index = 0; index < after.length; index++) {
    const arg = after[index]!;
    if (arg === "--config" || arg === "-c") index++;
    else if (!arg.startsWith("--config=")) out.push(arg);
  }
  return out;
}

/** Sub-commands live in src/cli/commands/<name>.ts and export `run`. */
async function loadSubcommand(name: string): Promise<CliCommand | null> {
  if (!/^[a-z][a-z-]*$/.test(name)) return null;
  const file = new URL(`./commands/${name}.js`, import.meta.url);
  if (!existsSync(fileURLToPath(file))) return null;
  const module = (await import(file.href)) as { run?: CliCommand };
  return module.run ?? null;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
