import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { backupDatabase } from "../../src/store/backup.js";
import { Store } from "../../src/store/index.js";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";

function run(args: string[], cwd: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [...MAGPIE_NODE_ARGS, ...args], {
      cwd,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** A separate process that keeps writing to the database (as a running Magpie would) until killed. */
function startWriter(file: string) {
  const script = `
    const Database = require(${JSON.stringify(require.resolve("better-sqlite3"))});
    const db = new Database(${JSON.stringify(file)});
    db.pragma("busy_timeout = 5000");
    const insert = db.prepare("INSERT INTO soak_writes (payload) VALUES (?)");
    let n = 0;
    process.stdout.write("writing\\n");
    setInterval(() => { for (let i = 0; i < 20; i++) insert.run("w".repeat(200) + (n++)); }, 1);
  `;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const started = new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
  return { child, started };
}

function prepareDatabase(dataDir: string, rows: number): string {
  const store = Store.open(dataDir);
  store.db.exec("CREATE TABLE soak_writes (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)");
  const insert = store.db.prepare("INSERT INTO soak_writes (payload) VALUES (?)");
  store.db.transaction(() => {
    for (let index = 0; index < rows; index++) insert.run("x".repeat(500) + index);
  })();
  store.close();
  return path.join(dataDir, "magpie.db");
}

function count(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(db.pragma("journal_mode", { simple: true })).toBe("delete");
    expect(db.prepare("SELECT count(*) FROM schema_migrations").pluck().get()).toBeGreaterThan(0);
    return db.prepare("SELECT count(*) FROM soak_writes").pluck().get() as number;
  } finally {
    db.close();
  }
}

describe("magpie backup", () => {
  it("copies the database while another process keeps writing; the copy is whole and consistent", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-backup-"));
    const dataDir = path.join(cwd, "data");
    writeFileSync(path.join(cwd, "magpie.yaml"), `dataDir: ${dataDir}\n`);
    const file = prepareDatabase(dataDir, 20_000);
    const writer = startWriter(file);
    try {
      await writer.started;
      const live = new Database(file, { readonly: true });
      const before = live.prepare("SELECT count(*) FROM soak_writes").pluck().get() as number;
      const result = await run(["backup", "--to", "copy.db"], cwd);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/✓ Backed up the database to .*copy\.db \(\d+\.\d MiB, \d+ ms\)/);
      const copied = count(path.join(cwd, "copy.db"));
      const after = live.prepare("SELECT count(*) FROM soak_writes").pluck().get() as number;
      live.close();
      expect(copied).toBeGreaterThanOrEqual(before);
      expect(copied).toBeLessThanOrEqual(after);
      expect(after).toBeGreaterThan(before); // the writer was never blocked for the whole copy

      // Default target: <dataDir>/backups/magpie-<time>.db; no partial file left behind.
      const defaulted = await run(["backup"], cwd);
      expect(defaulted.code).toBe(0);
      const backups = readdirSync(path.join(dataDir, "backups"));
      expect(backups).toHaveLength(1);
      expect(backups[0]).toMatch(/^magpie-\d{8}-\d{6}\.db$/);
      expect(count(path.join(dataDir, "backups", backups[0]!))).toBeGreaterThanOrEqual(copied);
    } finally {
      writer.child.kill("SIGKILL");
    }
  });

  it("in steps, in-process, while the same process writes between steps", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-backup-"));
    const file = prepareDatabase(dataDir, 5_000);
    const db = new Database(file);
    const insert = db.prepare("INSERT INTO soak_writes (payload) VALUES (?)");
    // A bounded number of writes: each one between steps restarts the copy (another connection wrote), so writes
    // without end would keep a copy on a loaded machine from ever finishing — a livelock of the test, not of
    // `magpie backup`, which runs all pages in one step.
    let writes = 0;
    const timer = setInterval(() => {
      if (writes < 25) {
        insert.run("during");
        writes++;
      }
    }, 2);
    try {
      const result = await backupDatabase(file, path.join(dataDir, "stepped.db"), { pagesPerStep: 50 });
      expect(result.pages).toBeGreaterThan(500);
      expect(count(result.file)).toBeGreaterThanOrEqual(5_000);
    } finally {
      clearInterval(timer);
      db.close();
    }
  });

  it("refuses a missing database and a bad flag", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-backup-"));
    writeFileSync(path.join(cwd, "magpie.yaml"), `dataDir: ${path.join(cwd, "nowhere")}\n`);
    const missing = await run(["backup"], cwd);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("No database at");
    expect(existsSync(path.join(cwd, "nowhere", "backups"))).toBe(false);
    const bad = await run(["backup", "--too", "x"], cwd);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("Usage: magpie backup");
  });
});
