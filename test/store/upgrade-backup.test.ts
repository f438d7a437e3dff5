import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/database.js";
import { migrations } from "../../src/store/migrations/index.js";

const backupsOf = (dir: string) =>
  existsSync(path.join(dir, "backups")) ? readdirSync(path.join(dir, "backups")).sort() : [];

describe("backup before migrations", () => {
  it("copies an existing database before an upgrade migrates it; none for a new or current one", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-upgrade-"));
    const file = path.join(dir, "magpie.db");
    const older = migrations.slice(0, -2);
    const fresh = openDatabase(file, older);
    fresh.prepare("INSERT INTO kv (key, value, updated_at) VALUES ('k', '\"before\"', 0)").run();
    fresh.close();
    expect(backupsOf(dir)).toEqual([]); // a new database has nothing to lose

    const upgraded = openDatabase(file);
    upgraded.close();
    const [copy, ...others] = backupsOf(dir);
    expect(others).toEqual([]);
    const firstPending = Math.min(...migrations.slice(-2).map((migration) => migration.version));
    expect(copy).toMatch(
      new RegExp(`^magpie-before-v${String(firstPending).padStart(3, "0")}-\\d{8}-\\d{6}\\.db$`),
    );
    const backup = new Database(path.join(dir, "backups", copy!), { readonly: true });
    expect(backup.prepare("SELECT count(*) FROM schema_migrations").pluck().get()).toBe(older.length);
    expect(backup.prepare("SELECT value FROM kv WHERE key = 'k'").pluck().get()).toBe('"before"');
    backup.close();

    openDatabase(file).close(); // nothing to migrate: no new copy
    expect(backupsOf(dir)).toHaveLength(1);
  });
});
