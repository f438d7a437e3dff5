import { mkdirSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { backupBeforeMigrations } from "./backup.js";
import { migrations as allMigrations, type Migration } from "./migrations/index.js";

export type Db = Database.Database;

/** Opens (creating if needed) the SQLite database with WAL and foreign keys, and runs pending migrations. */
export function openDatabase(file: string, migrations: Migration[] = allMigrations): Db {
  if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  if (file !== ":memory:") backupBeforeMigrations(db, file, migrations);
  migrate(db, migrations);
  return db;
}

/** Applies every migration not yet recorded in `schema_migrations`, each in its own transaction. */
export function migrate(db: Db, migrations: Migration[]): number[] {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const done = new Set(db.prepare("SELECT version FROM schema_migrations").pluck().all() as number[]);
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
