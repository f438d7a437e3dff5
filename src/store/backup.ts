import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import { row } from "../lib/row.js";
import type { Migration } from "./migrations/index.js";

/** Pre-migration copies kept in `<dataDir>/backups` (older ones are deleted). */
const KEEP_UPGRADE_BACKUPS = 3;

const ALL_PAGES = 0x7fffffff;

export interface BackupResult {
  /** Where the copy was written. */
  file: string;
  bytes: number;
  pages: number;
  durationMs: number;
}

export interface BackupOptions {
  /**
   * Pages copied per step (default: all in one). With WAL, the copy's read snapshot never blocks Magpie's
   * writers; in several steps, a write by another connection between steps restarts the copy.
   */
  pagesPerStep?: number;
}

/** `<dataDir>/backups/magpie-<UTC timestamp>.db`, the default target of `magpie backup`. */
export function defaultBackupFile(dataDir: string, now = new Date()): string {
  // regex-input-bounded: an ISO timestamp, 24 characters
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-");
  return path.join(dataDir, "backups", `magpie-${stamp}.db`);
}

/**
 * Copies the live database with SQLite's online backup API: safe while Magpie runs and writes. The copy is written under a temporary name, checked, then renamed, so a file at `destination`
 * is always a whole, consistent database.
 */
export async function backupDatabase(
  sourceFile: string,
  destination: string,
  options: BackupOptions = {},
): Promise<BackupResult> {
  if (!existsSync(sourceFile)) {
    throw new Error(`No database at ${sourceFile}. Check dataDir in the config (or --config).`);
  }
  const target = path.resolve(destination);
  if (target === path.resolve(sourceFile))
    throw new Error("The backup cannot overwrite the database itself.");
  mkdirSync(path.dirname(target), { recursive: true });
  const partial = `${target}.partial`;
  rmSync(partial, { force: true });
  const started = performance.now();
  // No migrations: a backup copies the database exactly as it is, whatever version wrote it.
  const source = new Database(sourceFile, { fileMustExist: true });
  try {
    source.pragma("busy_timeout = 5000");
    const pagesPerStep = options.pagesPerStep ?? ALL_PAGES;
    const metadata = await source.backup(partial, { progress: () => pagesPerStep });
    const copy = new Database(partial, { fileMustExist: true });
    try {
      // The copy is a single file (rollback journal), so it can be moved and opened anywhere.
      copy.pragma("journal_mode = DELETE");
      const check = copy.pragma("quick_check", { simple: true });
      if (check !== "ok") throw new Error(`The backup failed its integrity check: ${String(check)}`);
    } finally {
      copy.close();
    }
    renameSync(partial, target);
    return {
      file: target,
      bytes: statSync(target).size,
      pages: metadata.totalPages,
      durationMs: Math.round(performance.now() - started),
    };
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    source.close();
  }
}

/**
 * Before an upgrade's migrations change an existing database, a copy goes to
 * `<dataDir>/backups/magpie-before-v<version>-<UTC time>.db` (`VACUUM INTO`: consistent, compact, synchronous).
 * A new database or one with nothing to migrate gets none; the last three such copies are kept.
 */
export function backupBeforeMigrations(
  db: Database.Database,
  file: string,
  migrations: Migration[],
): string | null {
  const hasTable = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .get();
  if (!hasTable) return null;
  const done = new Set(
    row(z.number(), "schema_migrations version").all(
      db.prepare("SELECT version FROM schema_migrations").pluck().all(),
    ),
  );
  if (done.size === 0) return null;
  const pending = migrations.filter((migration) => !done.has(migration.version));
  if (pending.length === 0) return null;
  const directory = path.join(path.dirname(file), "backups");
  mkdirSync(directory, { recursive: true });
  const from = Math.min(...pending.map((migration) => migration.version));
  const stamp = path.basename(defaultBackupFile(directory)).replace(/^magpie-|\.db$/g, "");
  const target = path.join(directory, `magpie-before-v${String(from).padStart(3, "0")}-${stamp}.db`);
  rmSync(target, { force: true });
  db.prepare("VACUUM INTO ?").run(target);
  const older = readdirSync(directory)
    .filter((name) => /^magpie-before-v\d+-[\d-]+\.db$/.test(name))
    .sort((a, b) => statSync(path.join(directory, b)).mtimeMs - statSync(path.join(directory, a)).mtimeMs);
  for (const name of older.slice(KEEP_UPGRADE_BACKUPS)) rmSync(path.join(directory, name), { force: true });
  return target;
}
