import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/database.js";
import { migrations } from "../../src/store/migrations/index.js";
import { RestoreError, restoreDatabase } from "../../src/store/restore.js";
import { printable } from "../../src/store/restore-schema.js";
import { hostileInputs, LINEAR_BOUND_MS, timed } from "../helpers/hostile-inputs.js";

/**
 * `restoreDatabase` refuses a backup whose schema holds anything Magpie's migrations don't create — compared with a
 * fresh in-memory database migrated to the backup's versions — naming the object, and changes nothing.
 */

let dir: string;
let dataDir: string;
let live: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "magpie-restore-schema-"));
  dataDir = path.join(dir, "data");
  live = path.join(dataDir, "magpie.db");
  openDatabase(live).close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A whole Magpie backup (every migration), changed by `tamper`. */
function backup(name: string, tamper: (db: Database.Database) => void, list = migrations): string {
  const file = path.join(dir, `${name}.db`);
  const db = openDatabase(file, list);
  tamper(db);
  db.pragma("journal_mode = DELETE");
  db.close();
  return file;
}

async function refusal(file: string): Promise<RestoreError> {
  const before = readFileSync(live);
  const error = await restoreDatabase({ dataDir, file }).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(RestoreError);
  expect(readFileSync(live).equals(before)).toBe(true);
  expect(existsSync(path.join(dataDir, "backups"))).toBe(false);
  return error as RestoreError;
}

describe("restore: the backup's schema is what the migrations create", () => {
  it("accepts an untouched backup, an older one (fewer migrations), and SQLite's own statistics tables", async () => {
    const whole = backup("whole", (db) => {
      db.prepare("INSERT INTO kv (key, value, updated_at) VALUES ('a', 'b', 0)").run();
      db.exec("ANALYZE");
    });
    expect((await restoreDatabase({ dataDir, file: whole })).schemaVersion).toBe(
      Math.max(...migrations.map((m) => m.version)),
    );
    const older = backup("older", () => {}, migrations.slice(0, 6));
    const restored = await restoreDatabase({ dataDir, file: older });
    expect(restored.pending.length).toBe(migrations.length - 6);
  });

  it("refuses an extra trigger (a stranger becomes an owner on the next message), naming it", async () => {
    const file = backup("trigger", (db) =>
      db.exec(`CREATE TRIGGER make_owner AFTER INSERT ON inbox BEGIN
        INSERT OR IGNORE INTO approved_senders (channel, user_id, approved_at, approved_by)
        VALUES ('telegram', '666', 0, 'backup');
      END`),
    );
    const error = await refusal(file);
    expect(error.code).toBe("restore.foreign_schema");
    expect(error.message).toContain(`not created by Magpie's migrations: trigger "make_owner" (on "inbox")`);
    expect(error.message).toContain("can't be restored");
  });

  it("refuses an extra view, index or table, and an fts5 virtual table", async () => {
    const view = await refusal(backup("view", (db) => db.exec("CREATE VIEW owners AS SELECT * FROM kv")));
    expect(view.message).toContain(`view "owners"`);
    const index = await refusal(backup("index", (db) => db.exec("CREATE INDEX kv_value ON kv (value)")));
    expect(index.message).toContain(`index "kv_value" (on "kv")`);
    const table = await refusal(backup("table", (db) => db.exec("CREATE TABLE notes (x)")));
    expect(table.message).toContain(`table "notes"`);
    const fts = await refusal(
      backup("fts", (db) => db.exec("CREATE VIRTUAL TABLE evil_search USING fts5(body)")),
    );
    expect(fts.message).toMatch(/not created by Magpie's migrations: .*table "evil_search"/);
    expect(fts.message).toContain(`table "evil_search_data"`);
  });

  it("refuses a table whose SQL was altered (a column's default changed), and a real index rewritten", async () => {
    // Migration 001 as a crafted file would carry it: same version and name, the inbox's default status changed.
    const tampered = migrations.map((migration) =>
      migration.version === 1 && typeof migration.up === "string"
        ? { ...migration, up: migration.up.replace("DEFAULT 'pending'", "DEFAULT 'done'") }
        : migration,
    );
    expect(tampered).not.toEqual(migrations);
    const file = backup("altered", () => {}, tampered);
    const altered = await refusal(file);
    expect(altered.message).toContain(`changed from what the migrations create: table "inbox"`);

    const renamed = await refusal(
      backup("dropped", (db) => {
        db.exec("DROP INDEX inbox_open");
        db.exec("CREATE INDEX inbox_open ON inbox (id)");
      }),
    );
    expect(renamed.message).toContain(
      `changed from what the migrations create: index "inbox_open" (on "inbox")`,
    );
  });

  it("refuses a trigger named like a real object, and a missing one", async () => {
    const named = await refusal(
      backup("named", (db) =>
        db.exec(
          "CREATE TRIGGER inbox_open AFTER INSERT ON kv BEGIN DELETE FROM audit; END; DROP INDEX audit_at",
        ),
      ),
    );
    expect(named.message).toContain(`not created by Magpie's migrations: trigger "inbox_open" (on "kv")`);
    expect(named.message).toContain(`missing: index "audit_at" (on "audit")`);
  });

  it("escapes control characters, bidi overrides and quotes in a name it prints", async () => {
    const name = 'evil\u001b[2J\u001b]0;owned\u0007\n\u202eerht"\\u0041';
    const error = await refusal(
      backup("control", (db) =>
        db.exec(`CREATE TRIGGER "${name.replaceAll('"', '""')}" AFTER INSERT ON kv BEGIN SELECT 1; END`),
      ),
    );
    expect(error.message).toContain(
      'trigger "evil\\u001b[2J\\u001b]0;owned\\u0007\\u000a\\u202eerht\\"\\\\u0041" (on "kv")',
    );
    expect(error.message).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/);
  });

  it("refuses a schema_migrations list the migrations can't rebuild", async () => {
    const file = backup("versions", (db) => db.exec("DELETE FROM schema_migrations WHERE version = 1"));
    const error = await refusal(file);
    expect(error.code).toBe("restore.schema_unknown");
  });

  it("printable stays linear and short on 1 MB hostile names", () => {
    for (const [label, input] of Object.entries(hostileInputs())) {
      let shown = "";
      expect(
        timed(() => (shown = printable(input))),
        label,
      ).toBeLessThan(LINEAR_BOUND_MS);
      expect(shown.length, label).toBeLessThan(600);
    }
  });
});
