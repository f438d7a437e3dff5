import { afterEach, describe, expect, it } from "vitest";
import { ChannelSendError } from "../../src/lib/errors.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

async function until(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("platform outage (short version; the 10-minute one is the soak's)", () => {
  it("replies held by a platform outage are delivered once each, in order, when it ends", async () => {
    harness = await startTestApp({ config: { delivery: { fallback: ["test:elsewhere"] } } });
    const { app, channel, llm } = harness;
    llm!.script(reply.text("answer 1"), reply.text("answer 2"), reply.text("answer 3"));
    // The platform answers 5xx to the next sends (a Bot API outage): transient, so the outbox retries.
    channel!.failNext(new ChannelSendError("Internal Server Error", { code: "channel.500" }), 2);
    for (const [index, text] of ["q1", "q2", "q3"].entries()) {
      await channel!.receive(text);
      // The next message after this one's reply is queued: one turn per message.
      await until(() => app.store.outbox.pendingCount() + channel!.sent.length >= index + 1);
    }
    await until(() => channel!.texts().filter((text) => text.startsWith("answer")).length >= 3);
    await app.outbox.flush(2_000);
    expect(channel!.texts().filter((text) => text.startsWith("answer"))).toEqual([
      "answer 1",
      "answer 2",
      "answer 3",
    ]);
    // Within failoverAfterSecs nothing is redirected.
    expect(channel!.sent.filter((entry) => entry.target.chatId === "elsewhere")).toHaveLength(0);
  });
});
