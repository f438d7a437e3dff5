import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
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

  it("stops the ready new release, rolls back to 0.1.0 (its check passes), and answers what reached the failed one", async () => {
    await fixture.release("0.5.0");
    const answer = "Answered by 0.1.0 after the rollback";
    fixture.llm.script(
      // The new release's synthetic turn: refused by the model, a few seconds after it asked.
      reply.delay(4_000, reply.error(400, "this model refuses the new release")),
      // Meanwhile the owner writes, and the new release's turn for it is still waiting when it is stopped.
      reply.hang(),
      // After the rollback: 0.1.0's synthetic turn and its answer to that message, in either order.
      reply.text(answer),
      reply.text(answer),
    );
    const requestsBefore = fixture.llm.requests.length;
    const upgrade = fixture.magpie(["upgrade"]);
    await waitFor(
      () => fixture.llm.requests.length > requestsBefore,
      "the new release's synthetic turn",
      120_000,
    );
    fixture.telegram.pushMessage({
      chat: { id: fixture.owner, type: "private" },
      from: { id: fixture.owner },
      text: "are you being upgraded?",
    });
    await waitFor(() => fixture.llm.requests.length > requestsBefore + 1, "the new release's turn", 30_000);
    const result = await upgrade;
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toMatch(
      /✗ Magpie 0\.5\.0 \(v0\.5\.0\) failed: The synthetic turn failed \(exit 1\): ✗ selftest: the turn ended error/,
    );
    expect(result.stdout).toContain(
      "✓ 1 message(s) the failed release took in and did not answer are queued for 0.1.0.",
    );
    expect(result.stdout).toMatch(
      /✓ Rolled back: Magpie 0\.1\.0 runs again .*✓ synthetic turn: .*Answered by 0\.1\.0/,
    );
    expect(fixture.instance().version).toBe("0.1.0");
    expect(await fixture.version()).toBe("magpie 0.1.0");
    await waitFor(
      () => fixture.telegram.sentTexts().includes(answer),
      "the answer to the carried message",
      30_000,
    );
    expect(
      fixture.llm.requests.at(-1)?.messages.some((m) => m.content === "are you being upgraded?") ||
        fixture.llm.requests.at(-2)?.messages.some((m) => m.content === "are you being upgraded?"),
    ).toBe(true);
    fixture.llm.assertDone();
  }, 240_000);
});
