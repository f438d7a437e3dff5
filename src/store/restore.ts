import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import { errorCode, MagpieError } from "../lib/errors.js";
import { row } from "../lib/row.js";
import { backupDatabase, defaultBackupFile } from "./backup.js";
import { migrations as allMigrations, type Migration } from "./migrations/index.js";
import { describeObject, schemaDifferences } from "./restore-schema.js";

const versionValues = row(z.number(), "restore");

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
  /**
   * Compare the backup's schema with what its migrations create (default true). An upgrade's rollback puts back its
   * own snapshot of the running database and skips it.
   */
  verifySchema?: boolean;
  /**
   * How the database being replaced is kept: `copy` (default) — SQLite's online backup, and its files moved aside
   * as they are when SQLite can't read it; `files` — moved aside as files, never opened (a failed upgrade's).
   */
  keepAside?: "copy" | "files";
  now?: Date;
}

export interface RestoreResult extends BackupCheck {
  database: string;
  /** Where the database that was replaced is kept (null when there was none): a copy, or a directory of its files. */
  previous: string | null;
  /** Set when its files were moved aside as they were: why (SQLite's error, or "never opened"), and their names. */
  movedAside: { reason: string; files: string[] } | null;
}

/** A database's files moved aside as they were (magpie.db with its -wal, -shm and -journal). */
export interface MovedAside {
  dir: string;
  /** The kept magpie.db. */
  database: string;
  /** The names moved (magpie.db, magpie.db-wal …). */
  files: string[];
}

/** The files SQLite keeps beside a database: what is committed may be only in the WAL. */
const DATABASE_SUFFIXES = ["", "-wal", "-shm", "-journal"];

const pad = (version: number) => String(version).padStart(3, "0");

/**
 * Checks that `file` is a whole Magpie database this release can run: SQLite's header, `integrity_check`, the
 * `schema_migrations` table, and no migration this release doesn't know (a backup from a newer release).
 */
export function checkBackup(
  file: string,
  migrations: Migration[] = allMigrations,
  options: { allowNewer?: boolean; verifySchema?: boolean; shownAs?: string } = {},
): BackupCheck {
  const shown = options.shownAs ?? file;
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
      `${shown} is not a SQLite database (no "SQLite format 3" header). Pick a file written by magpie backup.`,
    );
  }
  let db: Database.Database;
  try {
    db = new Database(file, { fileMustExist: true });
  } catch (error) {
    throw new RestoreError(
      "restore.unreadable",
      `${shown} can't be opened as a database: ${messageOf(error)}`,
      {
        cause: error,
      },
    );
  }
  try {
    // Nothing the backup's schema holds may call an application function while it is checked.
    db.pragma("trusted_schema = OFF");
    let problems: string[];
    try {
      const rows = db.pragma("integrity_check") as Array<{ integrity_check: string }>;
      problems = rows.map((row) => row.integrity_check);
    } catch (error) {
      throw new RestoreError(
        "restore.corrupt",
        `${shown} is damaged (${messageOf(error)}); it can't be restored. Use another backup.`,
        { cause: error },
      );
    }
    if (problems.length !== 1 || problems[0] !== "ok") {
      throw new RestoreError(
        "restore.corrupt",
        `${shown} failed SQLite's integrity check (${problems.slice(0, 3).join("; ")}); it can't be restored. Use another backup.`,
      );
    }
    const hasTable = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      .get();
    const versions = hasTable
      ? versionValues.all(db.prepare("SELECT version FROM schema_migrations").pluck().all())
      : [];
    if (versions.length === 0) {
      throw new RestoreError(
        "restore.not_magpie",
        `${shown} is a SQLite database but not Magpie's (it has no schema_migrations). Pick a file written by magpie backup.`,
      );
    }
    const known = new Set(migrations.map((migration) => migration.version));
    const unknown = versions.filter((version) => !known.has(version)).sort((a, b) => a - b);
    const schemaVersion = Math.max(...versions);
    if (unknown.length > 0 && !options.allowNewer) {
      const newest = Math.max(...known);
      throw new RestoreError(
        "restore.newer_schema",
        `${shown} comes from a newer Magpie: its schema is version ${pad(schemaVersion)} (migrations ${unknown.map(pad).join(", ")} are unknown here), and this Magpie knows up to version ${pad(newest)}. Upgrade first (magpie upgrade), then restore.`,
      );
    }
    if (options.verifySchema !== false) refuseForeignObjects(db, shown, versions, migrations);
    const have = new Set(versions);
    const pending = [...known].filter((version) => !have.has(version)).sort((a, b) => a - b);
    return { schemaVersion, pending, bytes: statSync(file).size };
  } finally {
    db.close();
  }
}

/**
 * Refuses a backup whose schema holds an object (table, index, view, trigger) its migrations don't create, or one
 * they create with other SQL: a trigger slipped into a backup runs on Magpie's next write (e.g. making a stranger an
 * owner), so what goes live is exactly the schema this release's migrations build.
 */
function refuseForeignObjects(
  db: Database.Database,
  shown: string,
  versions: number[],
  migrations: Migration[],
): void {
  let differences: ReturnType<typeof schemaDifferences>;
  try {
    differences = schemaDifferences(db, versions, migrations);
  } catch (error) {
    throw new RestoreError(
      "restore.schema_unknown",
      `${shown} lists migrations ${[...versions]
        .sort((a, b) => a - b)
        .map(pad)
        .join(
          ", ",
        )} in schema_migrations, which don't build a schema here (${messageOf(error)}); it can't be checked, so it can't be restored. Use a file written by magpie backup.`,
      { cause: error },
    );
  }
  if (differences.length === 0) return;
  const groups = (["extra", "altered", "missing"] as const)
    .map((kind) => {
      const named = differences.filter((found) => found.kind === kind);
      if (named.length === 0) return null;
      const listed = named.slice(0, 10).map(describeObject).join(", ");
      const more = named.length > 10 ? ` and ${named.length - 10} more` : "";
      const label = {
        extra: "not created by Magpie's migrations",
        altered: "changed from what the migrations create",
        missing: "missing",
      }[kind];
      return `${label}: ${listed}${more}`;
    })
    .filter((group): group is string => group !== null);
  throw new RestoreError(
    "restore.foreign_schema",
    `${shown} has a schema that Magpie's migrations don't make — ${groups.join("; ")}. An object of its own (a trigger above all) would run inside Magpie on its next write, so it can't be restored. Use a file written by magpie backup.`,
  );
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
    const check = checkBackup(incoming, options.migrations, {
      allowNewer: options.allowNewer,
      verifySchema: options.verifySchema,
      shownAs: source,
    });
    // A single file, whatever journal mode the backup had: Magpie turns WAL on again when it opens it.
    const copy = new Database(incoming, { fileMustExist: true });
    try {
      copy.pragma("journal_mode = DELETE");
    } finally {
      copy.close();
    }
    let previous: string | null = null;
    let movedAside: RestoreResult["movedAside"] = null;
    if (live) {
      const label = options.asideLabel ?? "before-restore";
      const kept =
        options.keepAside === "files"
          ? { moved: moveDatabaseAside(dataDir, label, options.now), reason: "never opened" }
          : await keepAside(database, dataDir, label, options.now);
      if ("moved" in kept) {
        previous = kept.moved.dir;
        movedAside = { reason: kept.reason, files: kept.moved.files };
      } else previous = kept.copy;
      matchOwnership(incoming, live);
    }
    fsyncFile(incoming);
    // The old database's WAL was checkpointed and copied aside (or moved with it); a stale WAL or journal must not
    // be replayed into the new file.
    for (const suffix of DATABASE_SUFFIXES.slice(1)) rmSync(`${database}${suffix}`, { force: true });
    renameSync(incoming, database);
    fsyncFile(dataDir);
    return { ...check, database, previous, movedAside };
  } finally {
    removeDatabaseFiles(incoming);
  }
}

/**
 * Keeps the current database as `<dataDir>/backups/magpie-<label>-<UTC time>.db`: its files (with the WAL, where the
 * last commits may be) are copied as bytes to a scratch name and SQLite's online backup is made from that copy, so
 * SQLite never opens the live files — opening a damaged database can drop its WAL. When the copy can't be read (a
 * damaged file: "file is not a database") the files are moved aside as they are instead.
 */
async function keepAside(
  database: string,
  dataDir: string,
  label: string,
  now = new Date(),
): Promise<{ copy: string } | { moved: MovedAside; reason: string }> {
  const target = stampedPath(dataDir, label, now, ".db");
  const scratch = path.join(dataDir, `.magpie.db.aside-${process.pid}`);
  removeDatabaseFiles(scratch);
  try {
    for (const suffix of ["", "-wal"]) {
      if (lstatOrNull(`${database}${suffix}`))
        copyFileSync(`${database}${suffix}`, `${scratch}${suffix}`, constants.COPYFILE_EXCL);
    }
    return { copy: (await backupDatabase(scratch, target)).file };
  } catch (error) {
    try {
      return {
        moved: moveDatabaseAside(dataDir, label, now),
        reason: `it could not be copied: ${messageOf(error)}`,
      };
    } catch (moveError) {
      throw new RestoreError(
        "restore.aside_failed",
        `The current database (${database}) could not be copied aside (${messageOf(error)}) nor moved aside (${messageOf(moveError)}), so nothing was changed. Move it and its -wal file away by hand, then restore again.`,
        { cause: moveError },
      );
    }
  } finally {
    removeDatabaseFiles(scratch);
  }
}

/**
 * Moves `<dataDir>/magpie.db` and its -wal, -shm and -journal, as files, into
 * `<dataDir>/backups/magpie-<label>-<UTC time>/`, without opening them: a database a failed release damaged may not
 * be one SQLite can read, and what it holds (a half-applied migration in its WAL) stays as it was, to look at later.
 * A rename in the same file system; a copy and delete where the backups directory is another one.
 */
export function moveDatabaseAside(dataDir: string, label: string, now = new Date()): MovedAside {
  const directory = path.resolve(dataDir);
  const database = path.join(directory, "magpie.db");
  let dir = stampedPath(directory, label, now, "");
  // Two in the same second (an upgrade retried at once) each get their own directory.
  for (let attempt = 2; existsSync(dir); attempt++)
    dir = `${stampedPath(directory, label, now, "")}-${attempt}`;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files: string[] = [];
  for (const suffix of DATABASE_SUFFIXES) {
    const source = `${database}${suffix}`;
    if (!lstatOrNull(source)) continue;
    const target = path.join(dir, `magpie.db${suffix}`);
    try {
      renameSync(source, target);
    } catch (error) {
      if (errorCode(error) !== "EXDEV") throw error;
      copyFileSync(source, target, constants.COPYFILE_EXCL);
      rmSync(source);
    }
    files.push(`magpie.db${suffix}`);
  }
  fsyncFile(directory);
  return { dir, database: path.join(dir, "magpie.db"), files };
}

/** `<dataDir>/backups/magpie-<label>-<UTC time><extension>`. */
function stampedPath(dataDir: string, label: string, now: Date, extension: string): string {
  const stamped = defaultBackupFile(dataDir, now);
  return path.join(
    path.dirname(stamped),
    path.basename(stamped).replace("magpie-", `magpie-${label}-`).replace(/\.db$/, extension),
  );
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
  for (const suffix of DATABASE_SUFFIXES) rmSync(`${file}${suffix}`, { force: true });
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
