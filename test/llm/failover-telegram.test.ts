import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { reply, startOpenAiFake } from "../fakes/openai.js";
import { startTelegramApp } from "../helpers/telegram-app.js";

/** Failover end to end through the real grammY client and the Telegram fake, with two OpenAI fakes. */

const OWNER = { id: 777, first_name: "Alice" };

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

async function setup() {
  const fallback = await startOpenAiFake();
  cleanup.push(() => fallback.close());
  const app = await startTelegramApp({
    access: { allowFrom: [OWNER.id] },
    config: { llm: { maxRetries: 1, fallbacks: [{ model: "fb-model", baseUrl: fallback.url }] } },
  });
  cleanup.push(() => app.stop());
  const { telegram } = app;
  const texts = () =>
    telegram
      .callsOf("sendMessage")
      .filter((call) => !call.failed && String(call.body.chat_id) === String(OWNER.id))
      .map((call) => String(call.body.text));
  const dm = (text: string) =>
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text });
  return { primary: app.testApp.llm!, fallback, texts, dm };
}

describe("model failover in a Telegram chat", () => {
  it("503 on the primary (retried once): the fallback's answer arrives with a 'via' line", async () => {
    const { primary, fallback, texts, dm } = await setup();
    primary.script(reply.error(503, "overloaded"), reply.error(503, "still overloaded"));
    fallback.script(reply.text("From the fallback."));
    dm("hello");
    await waitFor(() => texts().length > 0, "the reply");
    expect(texts()).toHaveLength(1);
    expect(texts()[0]).toMatch(/^From the fallback\.\n\n.*via fb-model/);
    expect(primary.requests).toHaveLength(2);
    primary.assertDone();
    fallback.assertDone();
  });

  it("every model down: exactly one message, never silence", async () => {
    const { primary, fallback, texts, dm } = await setup();
    primary.script(reply.error(500, "a"), reply.error(500, "b"));
    fallback.script(reply.error(502, "c"), reply.error(502, "d"));
    dm("hello");
    await waitFor(() => texts().length > 0, "the message");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(texts()).toHaveLength(1);
    expect(texts()[0]).toMatch(/test-model/);
    expect(texts()[0]).toMatch(/fb-model/);
  });
});
