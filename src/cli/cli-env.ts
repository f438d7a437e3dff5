import type { MagpieConfig } from "../config/schema.js";
import type { Store } from "../store/index.js";
import type { TextOutput } from "./terminal-output.js";

/** What a CLI sub-command gets: config and store on demand, and its output streams. */
export interface CliEnv {
  /** Loads and validates the config (honours --config); throws ConfigError. */
  loadConfig(): MagpieConfig;
  /** Opens the database of `config.dataDir` (migrations applied). Close it when done. */
  openStore(config: MagpieConfig): Store;
  /** Human output goes through `terminalOutput` (main.ts): what reaches a terminal can't act on it. */
  stdout: TextOutput;
  stderr: TextOutput;
}

/** A sub-command module (`src/cli/commands/<name>.ts`): `magpie <name> ...argv`; resolves to the exit code. */
export type CliCommand = (argv: string[], env: CliEnv) => Promise<number>;
