import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { UpgradeFixture } from "./upgrade-fixture.js";

/** `magpie upgrade` to a release whose main.js throws at load: rolled back (fixture: upgrade-fixture.ts). */
describe("magpie upgrade: a release that fails to start", () => {
  let fixture: UpgradeFixture;
  beforeAll(async () => {
    fixture = await UpgradeFixture.create();
  }, 120_000);
  afterAll(async () => fixture?.dispose(), 60_000);

  it("rolls back: 0.1.0 runs and answers again, and the owner is told on Telegram", async () => {
    const revision = await fixture.release("0.3.0", () => {
      const main = path.join(fixture.upstream, "src/cli/main.ts");
      // After the shebang line: the bundle's main.js throws as it loads.
      writeFileSync(
        main,
        readFileSync(main, "utf8").replace("\n", '\nthrow new Error("this release is broken");\n'),
      );
    });
    const before = fixture.instance().pid;
    fixture.llm.script(reply.text("Upgrade check answered by 0.1.0 after the rollback"));
    const result = await fixture.magpie(["upgrade"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toMatch(
      /✗ Magpie 0\.3\.0 \(v0\.3\.0\) failed: It exited \(code 1\) before it was up\./,
    );
    expect(result.stdout).toMatch(/✓ Database put back from .*upgrade-.*magpie\.db/);
    expect(result.stdout).toMatch(
      /✓ Rolled back: Magpie 0\.1\.0 runs again .*\/readyz 200; ✓ synthetic turn/,
    );
    expect(result.stdout).toContain(`The owner was told (telegram chat ${fixture.owner})`);
    const log = path.join(fixture.dataDir, "logs", `magpie-${revision.slice(0, 12)}.log`);
    expect(readFileSync(log, "utf8")).toContain("this release is broken");
    expect(await fixture.version()).toBe("magpie 0.1.0");
    expect(fixture.instance().version).toBe("0.1.0");
    expect(fixture.instance().pid).not.toBe(before);
    await waitFor(
      () =>
        fixture.telegram
          .sentTexts()
          .find((text) => text.startsWith("Magpie upgrade rolled back: Upgrading to 0.3.0")),
      "the owner's notice",
      30_000,
    );
    await fixture.ownerSays("still there?", "Yes, 0.1.0 again");
    fixture.llm.assertDone();
  }, 240_000);
});
