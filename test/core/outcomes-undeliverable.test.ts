import { afterEach, describe, expect, it } from "vitest";
import { undeliverableFeature } from "../../src/app/undeliverable-feature.js";
import { ChannelSendError } from "../../src/lib/errors.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const blocked = () =>
  new ChannelSendError("Forbidden: bot was blocked by the user", { permanent: true, code: "channel.403" });

describe("undeliverable replies", () => {
  it("alert the owner once per chat and incident, in their first DM; a delivered reply ends the incident", async () => {
    harness = await startTestApp({ features: [undeliverableFeature] });
    const { llm, channel, app } = harness;
    llm!.script(
      reply.text("hello owner"),
      reply.text("r1"),
      reply.text("r2"),
      reply.text("r3"),
      reply.text("r4"),
    );
    // The owner's DM (chat-1) is known: they wrote there first.
    await channel!.receive("hi");
    await channel!.waitForSent(1);
    const group = { chatId: "group-7", isDirect: false };
    const ids: number[] = [];
    for (const text of ["one", "two"]) {
      channel!.failNext(blocked());
      const result = await channel!.receive(text, group);
      ids.push(result.status === "accepted" ? result.inboxId : -1);
      await until(() => app.store.inbox.get(ids.at(-1)!)?.outcome === "undeliverable");
    }
    await until(() => channel!.sent.length >= 2);
    await app.outbox.flush(2_000);
    const alerts = () =>
      channel!.sent.filter((entry) => entry.message.text.includes("can't deliver replies"));
    expect(alerts()).toHaveLength(1);
    expect(alerts()[0]!.target.chatId).toBe("chat-1");
    expect(alerts()[0]!.message.text).toContain(`magpie trace ${ids[0]}`);
    // Each failed once: a permanent refusal is never retried.
    expect(
      app.store.db
        .prepare("SELECT attempts FROM outbox WHERE inbox_id IN (?, ?)")
        .pluck()
        .all(ids[0], ids[1]),
    ).toEqual([1, 1]);

    // The chat takes a reply again: the incident is over; the next refusal is a new one and alerts again.
    await channel!.receive("three", group);
    await until(() => channel!.texts().includes("r3"));
    channel!.failNext(blocked());
    const again = await channel!.receive("four", group);
    await until(
      () =>
        app.store.inbox.get(again.status === "accepted" ? again.inboxId : -1)?.outcome === "undeliverable",
    );
    await until(() => alerts().length === 2);
  });
});
