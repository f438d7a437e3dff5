import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reply } from "../fakes/openai.js";
import { UpgradeFixture } from "./upgrade-fixture.js";

/** `magpie upgrade` to a release whose migration fails: rolled back to the pre-upgrade database (fixture: upgrade-fixture.ts). */
describe("magpie upgrade: a release whose migration fails", () => {
  let fixture: UpgradeFixture;
  beforeAll(async () => {
    fixture = await UpgradeFixture.create();
  }, 120_000);
  afterAll(async () => fixture?.dispose(), 60_000);

  it("rolls back: the database is the pre-upgrade one (schema and data), and 0.1.0 answers", async () => {
    const before = fixture.schema();
    await fixture.release("0.4.0", () => {
      const migrations = path.join(fixture.upstream, "src/store/migrations");
      // Two migrations: the first changes the schema (and commits), the second throws.
      writeFileSync(
        path.join(migrations, "990-probe.ts"),
        'export const probeMigration = { version: 990, name: "probe", up: "CREATE TABLE upgrade_probe (x)" };\n',
      );
      writeFileSync(
        path.join(migrations, "991-broken.ts"),
        'export const brokenMigration = { version: 991, name: "broken", up: () => { throw new Error("migration 991 failed"); } };\n',
      );
      const index = path.join(migrations, "index.ts");
      writeFileSync(
        index,
        `import { probeMigration } from "./990-probe.js";\nimport { brokenMigration } from "./991-broken.js";\n${readFileSync(
          index,
          "utf8",
        ).replace(
          "export const migrations: Migration[] = [",
          "export const migrations: Migration[] = [\n  probeMigration,\n  brokenMigration,",
        )}`,
      );
    });
    fixture.llm.script(reply.text("Upgrade check answered by 0.1.0 again"));
    const result = await fixture.magpie(["upgrade", "--to", "v0.4.0"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toContain("✗ Magpie 0.4.0 (v0.4.0) failed: It exited (code 1) before it was up.");
    expect(result.stdout).toMatch(
      /✓ The failed release's database files were moved aside, unopened: .*backups\/magpie-failed-upgrade-\d{8}-\d{6} \(magpie\.db[^)]*\)\./,
    );
    expect(result.stdout).toMatch(/✓ Database put back from .*upgrade-.*magpie\.db\./);
    expect(result.stdout).toContain("✓ Rolled back: Magpie 0.1.0 runs again");
    const logs = readFileSync(
      path.join(
        fixture.dataDir,
        "logs",
        `magpie-${(await fixture.git("rev-parse", "HEAD")).stdout.slice(0, 12)}.log`,
      ),
      "utf8",
    );
    expect(logs).toContain("migration 991 failed");
    const after = fixture.schema();
    expect(after.versions).toEqual(before.versions);
    expect(after.tables).not.toContain("upgrade_probe");
    expect(after.inbox).toBe(before.inbox);
    expect(await fixture.version()).toBe("magpie 0.1.0");
    await fixture.ownerSays("and now?", "Still 0.1.0");
    fixture.llm.assertDone();
  }, 240_000);
});
