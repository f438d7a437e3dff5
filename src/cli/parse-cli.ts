import { type ParseArgsConfig, parseArgs } from "node:util";
import { errorMessage } from "../lib/errors.js";
import type { CliEnv } from "./cli-env.js";

const HELP = { help: { type: "boolean", short: "h" } } as const;

/** A command's options, as `parseArgs` takes them. */
type CliOptions = NonNullable<ParseArgsConfig["options"]>;

/** What a sub-command's arguments parsed to: its options' values and the positionals. */
export interface CliArguments<O extends CliOptions> {
  values: ReturnType<typeof parseArgs<{ options: O; strict: true }>>["values"];
  positionals: string[];
}

/**
 * The preamble every `magpie <command>` shares: node's `parseArgs` in strict mode with `--help/-h` added. Returns
 * the parsed arguments, or the exit code to return at once — 2 after printing the problem and the usage (an
 * unknown flag, a missing value, a positional where none is taken), 0 after printing the usage for --help.
 */
export function parseCli<const O extends CliOptions>(
  argv: string[],
  env: Pick<CliEnv, "stdout" | "stderr">,
  usage: string,
  options: O,
  settings: { positionals?: boolean } = {},
): CliArguments<O> | number {
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, ...HELP },
      allowPositionals: settings.positionals ?? false,
      strict: true,
    });
  } catch (error) {
    env.stderr.write(`${errorMessage(error)}\n${usage}\n`);
    return 2;
  }
  if (parsed.values.help === true) {
    env.stdout.write(`${usage}\n`);
    return 0;
  }
  // parseArgs types its values from the options literal; the help flag added here is answered above.
  return { values: parsed.values as CliArguments<O>["values"], positionals: parsed.positionals };
}
