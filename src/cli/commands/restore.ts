import path from "node:path";
import { RestoreError, restoreDatabase } from "../../store/restore.js";
import { runningInstance } from "../../upgrade/instance.js";
import type { CliCommand } from "../cli-env.js";
import { parseCli } from "../parse-cli.js";

const USAGE = `Usage: magpie restore <file>
  Puts a backup (from magpie backup) back as the database. Magpie must be stopped.
  The backup is checked first (a whole SQLite database, Magpie's, not from a newer release, and no table, index,
  view or trigger that Magpie's migrations don't create); the current database is kept aside in
  <dataDir>/backups/magpie-before-restore-<UTC time>.db (its files moved as they are, when SQLite can't read
  it); the swap is atomic.
  An older backup is fine: its missing migrations run when Magpie starts.`;

/** `magpie restore <file>`: checks a backup and swaps it in for the database of a stopped Magpie. */
export const run: CliCommand = async (argv, env) => {
  const parsed = parseCli(argv, env, USAGE, {}, { positionals: true });
  if (typeof parsed === "number") return parsed;
  if (parsed.positionals.length !== 1) {
    env.stderr.write(`${parsed.positionals.length === 0 ? "Which backup?" : "One file only."}\n${USAGE}\n`);
    return 2;
  }
  const file = path.resolve(parsed.positionals[0]!);
  const config = env.loadConfig();
  const running = runningInstance(config.dataDir);
  if (running) {
    env.stderr.write(
      `✗ Magpie is running on ${config.dataDir} (pid ${running.pid}, ${running.mode} since ${running.startedAt}); nothing was changed.\n` +
        "  Stop it first — under systemd: sudo systemctl stop magpie; in a terminal: Ctrl-C; with Docker: docker compose stop —\n" +
        `  then run magpie restore ${file} again, and start Magpie.\n`,
    );
    return 1;
  }
  try {
    const result = await restoreDatabase({ dataDir: config.dataDir, file });
    const mib = (result.bytes / 1_048_576).toFixed(1);
    const version = String(result.schemaVersion).padStart(3, "0");
    env.stdout.write(`✓ Restored ${file} (schema version ${version}, ${mib} MiB) as ${result.database}.\n`);
    env.stdout.write(
      result.movedAside
        ? `  The database it replaced (${result.movedAside.reason}) was moved aside as it was: ${result.previous} (${result.movedAside.files.join(", ")}).\n`
        : result.previous
          ? `  The database it replaced is kept at ${result.previous}.\n`
          : "  There was no database before.\n",
    );
    if (result.pending.length > 0)
      env.stdout.write(
        `  ${result.pending.length} newer migration(s) run when Magpie starts (a copy is made first).\n`,
      );
    env.stdout.write("  Start Magpie again (e.g. sudo systemctl start magpie).\n");
    return 0;
  } catch (error) {
    if (error instanceof RestoreError) {
      env.stderr.write(`✗ ${error.message}\n  Nothing was changed.\n`);
      return 1;
    }
    throw error;
  }
};
