import path from "node:path";
import { backupDatabase, defaultBackupFile } from "../../store/backup.js";
import type { CliCommand } from "../cli-env.js";
import { parseCli } from "../parse-cli.js";

const USAGE = `Usage: magpie backup [--to <file>]
  Copies the database with SQLite's online backup; safe while Magpie runs.
  --to <file>   where to write the copy (default <dataDir>/backups/magpie-<UTC time>.db)
  Restore: stop Magpie, then magpie restore <file> (checks the copy, keeps the current database aside).`;

/** `magpie backup [--to <file>]`: a consistent copy of the live database. */
export const run: CliCommand = async (argv, env) => {
  const parsed = parseCli(argv, env, USAGE, { to: { type: "string" } });
  if (typeof parsed === "number") return parsed;
  const { values } = parsed;
  const config = env.loadConfig();
  const destination = values.to ? path.resolve(values.to) : defaultBackupFile(config.dataDir);
  const result = await backupDatabase(path.join(config.dataDir, "magpie.db"), destination);
  const mib = (result.bytes / 1_048_576).toFixed(1);
  env.stdout.write(`✓ Backed up the database to ${result.file} (${mib} MiB, ${result.durationMs} ms).\n`);
  return 0;
};
