import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { UpgradeFixture } from "./upgrade-fixture.js";

/**
 * `magpie upgrade` to releases that leave the database broken behind them: one overwrites magpie.db and exits, one
 * commits a migration and hangs in the next, one is killed in the middle of a migration. After each the previous
 * release runs and answers, the owner was told, and the failed release's files are kept aside — moved as files,
 * with their -wal and -shm, never opened (fixture: upgrade-fixture.ts).
 */

const GARBAGE = "this is no database ".repeat(4096);

/** A migration that commits its schema change. */
const probe = (version: number, table: string) => ({
  file: `${version}-probe.ts`,
  exportName: `probe${version}`,
  source: `export const probe${version} = { version: ${version}, name: "probe", up: "CREATE TABLE ${table} (x); INSERT INTO ${table} VALUES (1)" };\n`,
});

/** A migration that writes more than SQLite's page cache holds into the WAL, says its pid, and blocks forever. */
const hanging = (version: number) => ({
  file: `${version}-hang.ts`,
  exportName: `hang${version}`,
  source: `import { writeFileSync } from "node:fs";
import path from "node:path";
export const hang${version} = {
  version: ${version},
  name: "hang",
  up: (db: { name: string; exec(sql: string): void; prepare(sql: string): { run(value: string): void } }) => {
    db.exec("CREATE TABLE half_second (x)");
    const insert = db.prepare("INSERT INTO half_second VALUES (?)");
    for (let i = 0; i < 20000; i++) insert.run("x".repeat(200) + i);
    writeFileSync(path.join(path.dirname(db.name), "migration.pid"), String(process.pid));
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  },
};
`,
});

describe("magpie upgrade: releases that damage the database", () => {
  let fixture: UpgradeFixture;
  beforeAll(async () => {
    fixture = await UpgradeFixture.create();
  }, 120_000);
  afterAll(async () => fixture?.dispose(), 60_000);

  /** The failed release's files in the one `magpie-failed-upgrade-*` directory the stdout names. */
  function keptAside(stdout: string, seen: Set<string>): string {
    const dirs = readdirSync(path.join(fixture.dataDir, "backups")).filter(
      (name) => name.startsWith("magpie-failed-upgrade-") && !seen.has(name),
    );
    expect(dirs).toHaveLength(1);
    seen.add(dirs[0]!);
    const dir = path.join(fixture.dataDir, "backups", dirs[0]!);
    expect(stdout).toContain(`✓ The failed release's database files were moved aside, unopened: ${dir}`);
    return dir;
  }

  /** What a copy of the kept files holds (the kept files themselves stay as they are). */
  function tablesOf(dir: string): string[] {
    const scratch = mkdtempSync(path.join(tmpdir(), "magpie-aside-"));
    try {
      for (const name of readdirSync(dir)) copyFileSync(path.join(dir, name), path.join(scratch, name));
      const db = new Database(path.join(scratch, "magpie.db"));
      try {
        return db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
      } finally {
        db.close();
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  async function expectRolledBack(stdout: string, version: string, aside: string, answer: string) {
    expect(stdout).toMatch(/✓ Database put back from .*upgrade-.*magpie\.db\./);
    expect(stdout).toMatch(/✓ Rolled back: Magpie 0\.1\.0 runs again .*\/readyz 200; ✓ synthetic turn/);
    expect(stdout).toContain(`The owner was told (telegram chat ${fixture.owner})`);
    expect(fixture.instance().version).toBe("0.1.0");
    expect(await fixture.version()).toBe("magpie 0.1.0");
    const notice = await waitFor(
      () =>
        fixture.telegram
          .sentTexts()
          .find((text) => text.startsWith(`Magpie upgrade rolled back: Upgrading to ${version}`)),
      "the owner's notice",
      30_000,
    );
    expect(notice).toContain(aside);
    await fixture.ownerSays(`are you back after ${version}?`, answer);
  }

  const seen = new Set<string>();

  it("a release that overwrites magpie.db and exits: its files are moved aside unopened, the snapshot put back, 0.1.0 answers", async () => {
    const before = fixture.schema();
    await fixture.releaseWithMigrations("0.6.0", [
      {
        file: "990-damage.ts",
        exportName: "damage990",
        source: `import { writeFileSync } from "node:fs";
export const damage990 = {
  version: 990,
  name: "damage",
  up: (db: { name: string }) => {
    writeFileSync(db.name, ${JSON.stringify(GARBAGE)});
    process.exit(1);
  },
};
`,
      },
    ]);
    fixture.llm.script(reply.text("Upgrade check answered by 0.1.0 after the damage"));
    const result = await fixture.magpie(["upgrade", "--to", "v0.6.0"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toContain("✗ Magpie 0.6.0 (v0.6.0) failed: It exited (code 1) before it was up.");
    const aside = keptAside(result.stdout, seen);
    // Moved as they were: the garbage is still garbage, its WAL and shared memory beside it.
    expect(readFileSync(path.join(aside, "magpie.db"), "utf8")).toBe(GARBAGE);
    expect(readdirSync(aside).sort()).toEqual(["magpie.db", "magpie.db-shm", "magpie.db-wal"]);
    await expectRolledBack(result.stdout, "0.6.0", aside, "Back after the damage");
    const after = fixture.schema();
    expect(after.versions).toEqual(before.versions);
    fixture.llm.assertDone();
  }, 240_000);

  it("a release that half-migrates and hangs: the check times out, the hung process is killed, the half-migrated files are kept", async () => {
    await fixture.releaseWithMigrations("0.7.0", [probe(990, "half_probe"), hanging(991)]);
    fixture.llm.script(reply.text("Upgrade check answered by 0.1.0 after the hang"));
    const result = await fixture.magpie(["upgrade", "--to", "v0.7.0"], 240_000, {
      MAGPIE_UPGRADE_TIMEOUT: "20",
    });
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toContain("✗ Magpie 0.7.0 (v0.7.0) failed: It did not come up within 20 s.");
    const hung = Number(readFileSync(path.join(fixture.dataDir, "migration.pid"), "utf8"));
    expect(() => process.kill(hung, 0)).toThrow();
    const aside = keptAside(result.stdout, seen);
    expect(readdirSync(aside).sort()).toEqual(["magpie.db", "magpie.db-shm", "magpie.db-wal"]);
    // Migration 990 committed (into the WAL, which was kept with it); 991 never did.
    const kept = tablesOf(aside);
    expect(kept).toContain("half_probe");
    expect(kept).not.toContain("half_second");
    expect(fixture.schema().tables).not.toContain("half_probe");
    await expectRolledBack(result.stdout, "0.7.0", aside, "Back after the hang");
    fixture.llm.assertDone();
  }, 240_000);

  it("a release killed in the middle of a migration: rolled back, the files it left are kept", async () => {
    rmSync(path.join(fixture.dataDir, "migration.pid"), { force: true });
    await fixture.releaseWithMigrations("0.8.0", [probe(992, "killed_probe"), hanging(993)]);
    fixture.llm.script(reply.text("Upgrade check answered by 0.1.0 after the kill"));
    const upgrade = fixture.magpie(["upgrade", "--to", "v0.8.0"]);
    const marker = path.join(fixture.dataDir, "migration.pid");
    await waitFor(() => existsSync(marker), "migration 993 to start", 120_000);
    const migrating = Number(readFileSync(marker, "utf8"));
    process.kill(migrating, "SIGKILL");
    const result = await upgrade;
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toMatch(
      /✗ Magpie 0\.8\.0 \(v0\.8\.0\) failed: It exited \(code 137\) before it was up\./,
    );
    const aside = keptAside(result.stdout, seen);
    expect(readdirSync(aside).sort()).toEqual(["magpie.db", "magpie.db-shm", "magpie.db-wal"]);
    const kept = tablesOf(aside);
    expect(kept).toContain("killed_probe");
    expect(kept).not.toContain("half_second");
    expect(fixture.schema().tables).not.toContain("killed_probe");
    await expectRolledBack(result.stdout, "0.8.0", aside, "Back after the kill");
    fixture.llm.assertDone();
  }, 240_000);
  it("a step of the rollback fails too (the snapshot was overwritten): the rest still run, 0.1.0 starts on a new database and answers", async () => {
    await fixture.releaseWithMigrations("0.9.0", [
      {
        file: "994-snapshot.ts",
        exportName: "snapshot994",
        source: `import { readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
export const snapshot994 = {
  version: 994,
  name: "spoil the snapshot",
  up: (db: { name: string }) => {
    const backups = path.join(path.dirname(db.name), "backups");
    for (const name of readdirSync(backups))
      if (name.startsWith("upgrade-")) writeFileSync(path.join(backups, name, "magpie.db"), "spoilt");
    process.exit(1);
  },
};
`,
      },
    ]);
    fixture.llm.script(reply.text("Upgrade check answered by 0.1.0 on a new database"));
    const result = await fixture.magpie(["upgrade", "--to", "v0.9.0"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    keptAside(result.stdout, seen);
    expect(result.stdout).toMatch(
      /✗ Putting the snapshot's database back failed: .*is not a SQLite database/,
    );
    expect(result.stdout).toContain(
      "Magpie 0.1.0 starts on a new, empty database; put the snapshot back by hand",
    );
    expect(result.stdout).toMatch(
      /✗ Rolled back with problems: Magpie 0\.1\.0 runs \(pid \d+, .*\), but 1 step\(s\) failed \(above\)\./,
    );
    expect(result.stdout).toMatch(
      /By hand: stop Magpie; ln -sfn .*; magpie restore .*upgrade-.*magpie\.db; start Magpie\./,
    );
    expect(fixture.instance().version).toBe("0.1.0");
    await fixture.ownerSays("are you there at all?", "Yes, on a new database");
    fixture.llm.assertDone();
  }, 240_000);
});
