import { mkdirSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import { row } from "../lib/row.js";
import { backupBeforeMigrations } from "./backup.js";
import { migrations as allMigrations, type Migration } from "./migrations/index.js";

export type Db = Database.Database;

const versions = row(z.number(), "schema_migrations version");

/**
 * SQLite's page cache, set on purpose (issue 37): 4 MiB (negative = KiB). better-sqlite3 builds SQLite with 16 MiB,
 * which the connection fills as the database outgrows it and keeps for good — resident memory a 1 GB box pays
 * for nothing: with every statement on the message path going through an index (migration 024), the hot pages are
 * the upper levels and right edges of the indexes, and the message path at 1,000,000 stored messages spent the
 * same time in SQLite with 2, 4 or 16 MiB (test/store/query-plans.test.ts keeps it that way). Pages beyond it come
 * from the OS page cache, which the kernel gives back under pressure. Memory-mapped I/O stays off (`mmap_size`
 * 0): mapped pages of a multi-GB database would count as the process's resident memory, and an I/O error on a
 * mapped page is a SIGBUS instead of an SQLite error.
 */
const CACHE_SIZE = -4096;

/** Opens (creating if needed) the SQLite database with WAL and foreign keys, and runs pending migrations. */
export function openDatabase(file: string, migrations: Migration[] = allMigrations): Db {
  if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  db.pragma(`cache_size = ${CACHE_SIZE}`);
  db.pragma("mmap_size = 0");
  if (file !== ":memory:") backupBeforeMigrations(db, file, migrations);
  migrate(db, migrations);
  return db;
}

/** Applies every migration not yet recorded in `schema_migrations`, each in its own transaction. */
export function migrate(db: Db, migrations: Migration[]): number[] {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const done = new Set(versions.all(db.prepare("SELECT version FROM schema_migrations").pluck().all()));
  const applied: number[] = [];
  const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(migration.version)) continue;
    db.transaction(() => {
      if (typeof migration.up === "string") db.exec(migration.up);
      else migration.up(db);
      record.run(migration.version, migration.name, Date.now());
    })();
    applied.push(migration.version);
  }
  return applied;
}
