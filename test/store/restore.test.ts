import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { backupDatabase } from "../../src/store/backup.js";
import { openDatabase } from "../../src/store/database.js";
import { migrations } from "../../src/store/migrations/index.js";
import { checkBackup, RestoreError, restoreDatabase } from "../../src/store/restore.js";

/** `restoreDatabase`: what it accepts, what it refuses (nothing changed), and that the swap keeps the old copy. */

let dir: string;
let dataDir: string;
let live: string;

/** A row in the kv table (a table of the schema: restore refuses a table its migrations don't create). */
function note(db: Database.Database, text: string): void {
  db.prepare("INSERT INTO kv (key, value, updated_at) VALUES (?, ?, 0)").run(`note-${text}`, text);
}
const notes = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return (
      db.prepare("SELECT value FROM kv WHERE key LIKE 'note-%' ORDER BY rowid").pluck().all() as string[]
    ).join(",");
  } finally {
    db.close();
  }
};

async function expectRefused(file: string, code: string, message: RegExp): Promise<void> {
  const before = readFileSync(live);
  const error = await restoreDatabase({ dataDir, file }).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(RestoreError);
  expect((error as RestoreError).code).toBe(code);
  expect((error as RestoreError).message).toMatch(message);
  expect(readFileSync(live).equals(before)).toBe(true);
  expect(existsSync(path.join(dataDir, "backups"))).toBe(false);
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "magpie-restore-"));
  dataDir = path.join(dir, "data");
  live = path.join(dataDir, "magpie.db");
  const db = openDatabase(live);
  note(db, "live");
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("restoreDatabase", () => {
  it("swaps in an older-schema backup, keeps the current database (with its unsaved WAL) aside, drops the stale WAL", async () => {
    const older = path.join(dir, "older.db");
    const old = openDatabase(older, migrations.slice(0, 5));
    note(old, "from-backup");
    old.close();
    // A crashed Magpie's files: a committed write only in the WAL (copied while the writer still had it open).
    const writer = new Database(live);
    writer.pragma("wal_autocheckpoint = 0");
    note(writer, "only-in-wal");
    const crashed = { db: readFileSync(live), wal: readFileSync(`${live}-wal`) };
    writer.close();
    writeFileSync(live, crashed.db);
    writeFileSync(`${live}-wal`, crashed.wal);
    expect(crashed.wal.length).toBeGreaterThan(0);

    const result = await restoreDatabase({ dataDir, file: older, now: new Date("2026-01-02T03:04:05Z") });
    expect(result.schemaVersion).toBe(Math.max(...migrations.slice(0, 5).map((m) => m.version)));
    expect(result.pending).toEqual(
      migrations
        .slice(5)
        .map((m) => m.version)
        .sort((a, b) => a - b),
    );
    expect(result.previous).toBe(path.join(dataDir, "backups", "magpie-before-restore-20260102-030405.db"));
    expect(notes(live)).toBe("from-backup");
    expect(existsSync(`${live}-wal`)).toBe(false);
    expect(notes(result.previous!)).toBe("live,only-in-wal");
    // Starting Magpie on it runs the rest of the migrations.
    const reopened = openDatabase(live);
    expect(reopened.prepare("SELECT count(*) FROM schema_migrations").pluck().get()).toBe(migrations.length);
    reopened.close();
    expect(readdirSync(dataDir).filter((name) => name.includes("restore"))).toEqual([]);
  });

  it("restores a backup written by backupDatabase into an empty dataDir", async () => {
    const copy = path.join(dir, "copy.db");
    await backupDatabase(live, copy);
    rmSync(dataDir, { recursive: true });
    mkdirSync(dataDir);
    const result = await restoreDatabase({ dataDir, file: copy });
    expect(result.previous).toBeNull();
    expect(notes(live)).toBe("live");
  });

  it("a live database SQLite can't read is moved aside as files (with its -wal and -shm), never opened", async () => {
    const copy = path.join(dir, "copy.db");
    await backupDatabase(live, copy);
    const garbage = "overwritten by a botched migration ".repeat(2000);
    writeFileSync(live, garbage);
    writeFileSync(`${live}-wal`, "wal bytes");
    writeFileSync(`${live}-shm`, "shm bytes");
    const result = await restoreDatabase({ dataDir, file: copy, now: new Date("2026-01-02T03:04:05Z") });
    const aside = path.join(dataDir, "backups", "magpie-before-restore-20260102-030405");
    expect(result.previous).toBe(aside);
    expect(result.movedAside?.reason).toMatch(/^it could not be copied: file is not a database/);
    expect(result.movedAside?.files).toEqual(["magpie.db", "magpie.db-wal", "magpie.db-shm"]);
    expect(readFileSync(path.join(aside, "magpie.db"), "utf8")).toBe(garbage);
    expect(readFileSync(path.join(aside, "magpie.db-wal"), "utf8")).toBe("wal bytes");
    expect(notes(live)).toBe("live");
    expect(existsSync(`${live}-wal`)).toBe(false);
  });

  it("keepAside: 'files' moves even a healthy database as files, unopened (an upgrade's rollback)", async () => {
    const copy = path.join(dir, "copy.db");
    await backupDatabase(live, copy);
    const bytes = readFileSync(live);
    const result = await restoreDatabase({
      dataDir,
      file: copy,
      keepAside: "files",
      asideLabel: "failed-upgrade",
    });
    expect(result.movedAside).toEqual({ reason: "never opened", files: ["magpie.db"] });
    expect(path.basename(result.previous!)).toMatch(/^magpie-failed-upgrade-\d{8}-\d{6}$/);
    expect(readFileSync(path.join(result.previous!, "magpie.db")).equals(bytes)).toBe(true);
  });

  it("refuses a file that is not SQLite", async () => {
    const text = path.join(dir, "notes.db");
    writeFileSync(text, "hello, this is not a database".repeat(100));
    await expectRefused(text, "restore.not_sqlite", /not a SQLite database/);
    const empty = path.join(dir, "empty.db");
    writeFileSync(empty, "");
    await expectRefused(empty, "restore.not_sqlite", /not a SQLite database/);
  });

  it("refuses a truncated or corrupted backup", async () => {
    const copy = path.join(dir, "copy.db");
    await backupDatabase(live, copy);
    const truncated = path.join(dir, "truncated.db");
    writeFileSync(truncated, readFileSync(copy));
    truncateSync(truncated, Math.floor(statSync(copy).size / 2));
    await expectRefused(truncated, "restore.corrupt", /damaged|integrity check/);
    const scribbled = path.join(dir, "scribbled.db");
    const bytes = readFileSync(copy);
    bytes.fill(0x5a, 4096 + 100, 4096 * 3);
    writeFileSync(scribbled, bytes);
    await expectRefused(scribbled, "restore.corrupt", /damaged|integrity check/);
  });

  it("refuses a backup whose pages read fine but disagree (integrity_check's own report)", async () => {
    const file = path.join(dir, "disagrees.db");
    const db = openDatabase(file);
    db.exec("CREATE TABLE t (x TEXT); CREATE INDEX t_x ON t (x)");
    for (let i = 0; i < 20; i++)
      db.prepare("INSERT INTO t VALUES (?)").run(`value-${String(i).padStart(3, "0")}`);
    db.pragma("journal_mode = DELETE");
    const root = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 't_x'").pluck().get() as number;
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    db.close();
    // One key of the index changed in place: every page is well-formed, the index no longer matches its table.
    const bytes = readFileSync(file);
    const page = bytes.subarray((root - 1) * pageSize, root * pageSize);
    page[page.lastIndexOf(Buffer.from("value-005")) + 8] = "9".charCodeAt(0);
    writeFileSync(file, bytes);
    await expectRefused(
      file,
      "restore.corrupt",
      /failed SQLite's integrity check \(row \d+ missing from index t_x/,
    );
  });

  it("refuses a SQLite database that isn't Magpie's", async () => {
    const other = path.join(dir, "other.db");
    const db = new Database(other);
    db.exec("CREATE TABLE recipes (name TEXT)");
    db.close();
    await expectRefused(other, "restore.not_magpie", /not Magpie's \(it has no schema_migrations\)/);
  });

  it("refuses a backup from a newer release, naming both versions and 'upgrade first'", async () => {
    const newer = path.join(dir, "newer.db");
    const db = openDatabase(newer, [
      ...migrations,
      { version: 999, name: "future", up: "CREATE TABLE future (x)" },
    ]);
    db.close();
    const newest = String(Math.max(...migrations.map((m) => m.version))).padStart(3, "0");
    await expectRefused(
      newer,
      "restore.newer_schema",
      new RegExp(`schema is version 999 .*knows up to version ${newest}\\. Upgrade first`),
    );
    expect(() => checkBackup(newer)).toThrow(RestoreError);
  });

  it("refuses when magpie.db is a symbolic link, and the live database as its own backup", async () => {
    await expectRefused(live, "restore.same_file", /live database itself/);
    const elsewhere = path.join(dir, "elsewhere.db");
    writeFileSync(elsewhere, readFileSync(live));
    const copy = path.join(dir, "copy.db");
    await backupDatabase(live, copy);
    rmSync(live);
    symlinkSync(elsewhere, live);
    const error = await restoreDatabase({ dataDir, file: copy }).catch((caught: unknown) => caught);
    expect((error as RestoreError).code).toBe("restore.database_symlink");
    expect(readFileSync(elsewhere).equals(readFileSync(live))).toBe(true);
  });

  it("follows a symbolic link given as the backup, and never writes through a link planted at its temporary name", async () => {
    const copy = path.join(dir, "copy.db");
    await backupDatabase(live, copy);
    const link = path.join(dir, "latest.db");
    symlinkSync(copy, link);
    const victim = path.join(dir, "victim");
    writeFileSync(victim, "untouched");
    symlinkSync(victim, path.join(dataDir, `.magpie.db.restore-${process.pid}`));
    const result = await restoreDatabase({ dataDir, file: link });
    expect(notes(result.database)).toBe("live");
    expect(readFileSync(victim, "utf8")).toBe("untouched");
  });
});
