import { lstatSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { UpgradeFixture } from "./upgrade-fixture.js";

/** `magpie upgrade` to a good release: installed beside, switched to, checked, answering (fixture: upgrade-fixture.ts). */
describe("magpie upgrade: a good release", () => {
  let fixture: UpgradeFixture;
  beforeAll(async () => {
    fixture = await UpgradeFixture.create();
  }, 120_000);
  afterAll(async () => fixture?.dispose(), 60_000);

  it("a release that doesn't build: nothing is stopped, 0.1.0 keeps answering, the owner is told", async () => {
    const pid = fixture.instance().pid;
    await fixture.release("0.1.1", () => {
      writeFileSync(path.join(fixture.upstream, "src/cli/broken.ts"), "export const = ;\n");
      const main = path.join(fixture.upstream, "src/cli/main.ts");
      writeFileSync(main, readFileSync(main, "utf8").replace("\n", '\nimport "./broken.js";\n'));
    });
    const result = await fixture.magpie(["upgrade"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toContain(
      "✗ Installing v0.1.1 failed; Magpie 0.1.0 was not stopped and keeps running.",
    );
    expect(result.stdout).toMatch(/ERROR.*\n[\s\S]*src\/cli\/broken\.ts/);
    expect(result.stdout).toContain(`The owner was told (telegram chat ${fixture.owner})`);
    expect(fixture.instance().pid).toBe(pid);
    await waitFor(
      () =>
        fixture.telegram
          .sentTexts()
          .find((text) => text.startsWith("Magpie upgrade failed: Installing v0.1.1 failed")),
      "the owner's notice",
      30_000,
    );
    await fixture.ownerSays("still 0.1.0?", "Yes");
    expect(await fixture.version()).toBe("magpie 0.1.0");
    await fixture.git("rm", "-q", "src/cli/broken.ts");
    await fixture.git("checkout", "-q", "v0.1.0", "--", "src/cli/main.ts");
  }, 120_000);

  it("installs it beside, switches the install link, and the new version answers on Telegram", async () => {
    const revision = await fixture.release("0.2.0");
    fixture.llm.script(reply.text("Upgrade check answered by 0.2.0"));
    const before = fixture.instance().pid;
    const result = await fixture.magpie(["upgrade"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toMatch(/to v0\.2\.0 \([0-9a-f]{12}\); it runs as a detached process\./);
    expect(result.stdout).toMatch(
      /Snapshot: database, 1 config\/\.env file\(s\) and revision in .*backups\/upgrade-/,
    );
    expect(result.stdout).toContain(
      "✓ /readyz answered 200; ✓ synthetic turn: test-model answered through the console path",
    );
    expect(result.stdout).toContain("Upgrade check answered by 0.2.0");
    expect(result.stdout).toMatch(/✓ Upgraded Magpie 0\.1\.0 → 0\.2\.0/);
    // The install path is now a link into the releases directory, at the new revision.
    expect(lstatSync(fixture.install).isSymbolicLink()).toBe(true);
    expect(readlinkSync(fixture.install)).toBe(
      path.join(`${fixture.install}-releases`, revision.slice(0, 12)),
    );
    expect(await fixture.version()).toBe("magpie 0.2.0");
    expect(fixture.instance().version).toBe("0.2.0");
    expect(fixture.instance().pid).not.toBe(before);
    await fixture.ownerSays("hello 0.2.0", "Hi from 0.2.0");

    const again = await fixture.magpie(["upgrade", "--to", "0.2.0"]);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain("already at 0.2.0");
    const unknown = await fixture.magpie(["upgrade", "--to", "v9.9.9"]);
    expect(unknown.exitCode).toBe(1);
    expect(unknown.stderr).toContain("--to v9.9.9: no tag, branch of origin or commit by that name");
    fixture.llm.assertDone();
  }, 240_000);
});
