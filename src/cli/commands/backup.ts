import path from "node:path";
import { parseArgs } from "node:util";
import { backupDatabase, defaultBackupFile } from "../../store/backup.js";
import type { CliCommand } from "../cli-env.js";

const USAGE = `Usage: magpie backup [--to <file>]
  Copies the database with SQLite's online backup; safe while Magpie runs.
  --to <file>   where to write the copy (default <dataDir>/backups/magpie-<UTC time>.db)
  Restore: stop Magpie, then magpie restore <file> (checks the copy, keeps the current database aside).`;

/** `magpie backup [--to <file>]`: a consistent copy of the live database. */
export const run: CliCommand = async (argv, env) => {
  let values: { to?: string; help?: boolean };
  try {
    values = parseArgs({
      args: argv,
      options: { to: { type: "string" }, help: { type: "boolean", short: "h" } },
      allowPositionals: false,
      strict: true,
    }).values;
  } catch (error) {
    env.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    env.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const config = env.loadConfig();
  const destination = values.to ? path.resolve(values.to) : defaultBackupFile(config.dataDir);
  const result = await backupDatabase(path.join(config.dataDir, "magpie.db"), destination);
  const mib = (result.bytes / 1_048_576).toFixed(1);
  env.stdout.write(`✓ Backed up the database to ${result.file} (${mib} MiB, ${result.durationMs} ms).\n`);
  return 0;
};
