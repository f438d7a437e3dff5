import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  lstatSync,
  openSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { MagpieError } from "../core/errors.js";
import { backupDatabase, defaultBackupFile } from "./backup.js";
import { migrations as allMigrations, type Migration } from "./migrations/index.js";

const SQLITE_HEADER = "SQLite format 3\0";

/** A backup that can't be restored, or a restore that must not run now; the message names the fix. */
export class RestoreError extends MagpieError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "RestoreError";
  }
}

export interface BackupCheck {
  /** The highest migration the backup has. */
  schemaVersion: number;
  /** Migrations this release has that the backup lacks (they run at the next start). */
  pending: number[];
  bytes: number;
}

export interface RestoreOptions {
  dataDir: string;
  /** The backup to put back. */
  file: string;
  /** This release's migrations (tests pass others). */
  migrations?: Migration[];
  /** Names the kept-aside copy: `magpie-<label>-<UTC time>.db` (default `before-restore`). */
  asideLabel?: string;
  /**
   * Accept migrations this release doesn't know: an upgrade's rollback puts back the very database the previous
   * release ran with, whichever release runs the rollback.
   */
  allowNewer?: boolean;
  now?: Date;
}

export interface RestoreResult extends BackupCheck {
  database: string;
  /** Where the database that was replaced is kept (null when there was none). */
  previous: string | null;
}

const pad = (version: number) => String(version).padStart(3, "0");

/**
 * Checks that `file` is a whole Magpie database this release can run: SQLite's header, `integrity_check`, the
 * `schema_migrations` table, and no migration this release doesn't know (a backup from a newer release).
 */
export function checkBackup(
  file: string,
  migrations: Migration[] = allMigrations,
  options: { allowNewer?: boolean } = {},
): BackupCheck {
  const header = Buffer.alloc(SQLITE_HEADER.length);
  const descriptor = openSync(file, "r");
  let read: number;
  try {
    read = readSync(descriptor, header, 0, header.length, 0);
  } finally {
    closeSync(descriptor);
  }
  if (read < header.length || header.toString("latin1") !== SQLITE_HEADER) {
    throw new RestoreError(
      "restore.not_sqlite",
      `${file} is not a SQLite database (no "SQLite format 3" header). Pick a file written by magpie backup.`,
    );
  }
  let db: Database.Database;
  try {
    db = new Database(file, { fileMustExist: true });
  } catch (error) {
    throw new RestoreError(
      "restore.unreadable",
      `${file} can't be opened as a database: ${messageOf(error)}`,
      {
        cause: error,
      },
    );
  }
  try {
    let problems: string[];
    try {
      const rows = db.pragma("integrity_check") as Array<{ integrity_check: string }>;
      problems = rows.map((row) => row.integrity_check);
    } catch (error) {
      throw new RestoreError(
        "restore.corrupt",
        `${file} is damaged (${messageOf(error)}); it can't be restored. Use another backup.`,
        { cause: error },
      );
    }
    if (problems.length !== 1 || problems[0] !== "ok") {
      throw new RestoreError(
        "restore.corrupt",
        `${file} failed SQLite's integrity check (${problems.slice(0, 3).join("; ")}); it can't be restored. Use another backup.`,
      );
    }
    const hasTable = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      .get();
    const versions = hasTable
      ? (db.prepare("SELECT version FROM schema_migrations").pluck().all() as number[])
      : [];
    if (versions.length === 0) {
      throw new RestoreError(
        "restore.not_magpie",
        `${file} is a SQLite database but not Magpie's (it has no schema_migrations). Pick a file written by magpie backup.`,
      );
    }
    const known = new Set(migrations.map((migration) => migration.version));
    const unknown = versions.filter((version) => !known.has(version)).sort((a, b) => a - b);
    const schemaVersion = Math.max(...versions);
    if (unknown.length > 0 && !options.allowNewer) {
      const newest = Math.max(...known);
      throw new RestoreError(
        "restore.newer_schema",
        `${file} comes from a newer Magpie: its schema is version ${pad(schemaVersion)} (migrations ${unknown.map(pad).join(", ")} are unknown here), and this Magpie knows up to version ${pad(newest)}. Upgrade first (magpie upgrade), then restore.`,
      );
    }
    const have = new Set(versions);
    const pending = [...known].filter((version) => !have.has(version)).sort((a, b) => a - b);
    return { schemaVersion, pending, bytes: statSync(file).size };
  } finally {
    db.close();
  }
}

/**
 * Puts a backup in place of `<dataDir>/magpie.db` (Magpie must be stopped — the caller checks): the backup is
 * copied into `dataDir` under a temporary name and checked there (what is checked is what goes live), the current
 * database (with its WAL) is copied aside with SQLite's online backup, and the copy is fsynced and renamed over
 * `magpie.db`, so the database is at any moment either the old one or the whole new one.
 */
export async function restoreDatabase(options: RestoreOptions): Promise<RestoreResult> {
  const dataDir = path.resolve(options.dataDir);
  const database = path.join(dataDir, "magpie.db");
  const source = path.resolve(options.file);
  if (!existsSync(source)) throw new RestoreError("restore.missing", `No file at ${source}.`);
  if (!statSync(source).isFile())
    throw new RestoreError(
      "restore.not_file",
      `${source} is not a file. Pick a file written by magpie backup.`,
    );
  const live = lstatOrNull(database);
  if (live?.isSymbolicLink()) {
    throw new RestoreError(
      "restore.database_symlink",
      `${database} is a symbolic link (to ${realpathOrRaw(database)}); restore replaces the file and would leave the link's target behind. Set dataDir to the directory the database really is in.`,
    );
  }
  if (live && realpathSync(source) === realpathSync(database))
    throw new RestoreError("restore.same_file", `${source} is the live database itself; pick a backup.`);

  const incoming = path.join(dataDir, `.magpie.db.restore-${process.pid}`);
  removeDatabaseFiles(incoming);
  try {
    // COPYFILE_EXCL: a file (or link) already at the temporary name is never written through.
    copyFileSync(source, incoming, constants.COPYFILE_EXCL);
    const check = checkBackup(incoming, options.migrations, { allowNewer: options.allowNewer });
    // A single file, whatever journal mode the backup had: Magpie turns WAL on again when it opens it.
    const copy = new Database(incoming, { fileMustExist: true });
    try {
      copy.pragma("journal_mode = DELETE");
    } finally {
      copy.close();
    }
    let previous: string | null = null;
    if (live) {
      previous = await keepAside(database, dataDir, options.asideLabel ?? "before-restore", options.now);
      matchOwnership(incoming, live);
    }
    fsyncFile(incoming);
    // The old database's WAL was checkpointed and copied aside; a stale one must not be replayed into the new file.
    rmSync(`${database}-wal`, { force: true });
    rmSync(`${database}-shm`, { force: true });
    renameSync(incoming, database);
    fsyncFile(dataDir);
    return { ...check, database, previous };
  } finally {
    removeDatabaseFiles(incoming);
  }
}

/** Copies the current database (WAL included) to `<dataDir>/backups/magpie-<label>-<UTC time>.db`. */
async function keepAside(
  database: string,
  dataDir: string,
  label: string,
  now = new Date(),
): Promise<string> {
  const stamped = defaultBackupFile(dataDir, now);
  const target = path.join(
    path.dirname(stamped),
    path.basename(stamped).replace("magpie-", `magpie-${label}-`),
  );
  try {
    const db = new Database(database, { fileMustExist: true });
    try {
      db.pragma("busy_timeout = 5000");
      db.pragma("wal_checkpoint(TRUNCATE)");
    } finally {
      db.close();
    }
    return (await backupDatabase(database, target)).file;
  } catch (error) {
    throw new RestoreError(
      "restore.aside_failed",
      `The current database (${database}) could not be copied aside (${messageOf(error)}), so nothing was changed. Move it away by hand (with its -wal file) if it is damaged, then restore again.`,
      { cause: error },
    );
  }
}

/** Under sudo, the restored file keeps the owner and mode of the database it replaces (Magpie's user must write it). */
function matchOwnership(file: string, previous: { uid: number; gid: number; mode: number }): void {
  chmodSync(file, previous.mode & 0o777);
  if (process.getuid?.() === 0) chownSync(file, previous.uid, previous.gid);
}

function fsyncFile(file: string): void {
  const descriptor = openSync(file, "r");
  try {
    fsyncSync(descriptor);
  } finally {
    closeSync(descriptor);
  }
}

function removeDatabaseFiles(file: string): void {
  for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(`${file}${suffix}`, { force: true });
}

function lstatOrNull(file: string) {
  try {
    return lstatSync(file);
  } catch {
    return null;
  }
}

function realpathOrRaw(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return "a missing file";
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
