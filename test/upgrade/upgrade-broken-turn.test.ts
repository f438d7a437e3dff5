import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reply } from "../fakes/openai.js";
import { UpgradeFixture } from "./upgrade-fixture.js";

/**
 * `magpie upgrade` to a release that starts and is ready but whose synthetic turn fails (here the model refuses
 * its call): the running, ready new release is stopped and rolled back (fixture: upgrade-fixture.ts).
 */
describe("magpie upgrade: a release whose synthetic turn fails", () => {
  let fixture: UpgradeFixture;
  beforeAll(async () => {
    fixture = await UpgradeFixture.create();
  }, 120_000);
  afterAll(async () => fixture?.dispose(), 60_000);

  it("stops the ready new release, rolls back to 0.1.0 and its check passes", async () => {
    await fixture.release("0.5.0");
    fixture.llm.script(reply.error(400, "this model refuses the new release"), reply.text("0.1.0 checks in"));
    const result = await fixture.magpie(["upgrade"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toMatch(
      /✗ Magpie 0\.5\.0 \(v0\.5\.0\) failed: The synthetic turn failed \(exit 1\): ✗ selftest: the turn ended error/,
    );
    expect(result.stdout).toMatch(
      /✓ Rolled back: Magpie 0\.1\.0 runs again .*✓ synthetic turn: .*0\.1\.0 checks in/,
    );
    expect(fixture.instance().version).toBe("0.1.0");
    expect(await fixture.version()).toBe("magpie 0.1.0");
    await fixture.ownerSays("hello again", "Hi from 0.1.0 again");
    fixture.llm.assertDone();
  }, 240_000);
});
