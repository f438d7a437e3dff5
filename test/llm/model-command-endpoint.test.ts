import { afterEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { startTelegramApp } from "../helpers/telegram-app.js";

/**
 * `/model <name>` through Telegram with two OpenAI fakes: a fallback chosen for a chat is asked at that entry's
 * own `baseUrl` with its own `apiKey`, never at the primary's (DESIGN.md → Models → Per-chat model).
 */

const OWNER = { id: 777, first_name: "Alice" };

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

async function setup(llm: Record<string, unknown> = {}, agents?: ConfigInput["agents"]) {
  const fallback = await startOpenAiFake();
  cleanup.push(() => fallback.close());
  const app = await startTelegramApp({
    access: { allowFrom: [OWNER.id] },
    config: {
      llm: {
        fallbacks: [{ model: "fb-model", baseUrl: fallback.url, apiKey: "sk-fallback" }],
        ...llm,
      },
      ...(agents ? { agents } : {}),
    } as ConfigInput,
  });
  cleanup.push(() => app.stop());
  const { telegram } = app;
  const texts = () =>
    telegram
      .callsOf("sendMessage")
      .filter((call) => !call.failed && String(call.body.chat_id) === String(OWNER.id))
      .map((call) => String(call.body.text));
  /** Sends `text` as the owner and waits for the next reply. */
  const ask = async (text: string) => {
    const before = texts().length;
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text });
    await waitFor(() => texts().length > before, `the reply to ${text}`);
    return texts()[before]!;
  };
  return { primary: app.testApp.llm!, fallback, ask };
}

function authorization(fake: OpenAiFake, index: number): string | undefined {
  return fake.requestHeaders[index]?.authorization as string | undefined;
}

describe("/model <fallback> uses that entry's endpoint and key", () => {
  it("the chosen fallback is asked at its own baseUrl with its own apiKey; the primary gets nothing", async () => {
    const { primary, fallback, ask } = await setup();
    expect(await ask("/model fb-model")).toContain("now uses fb-model");
    fallback.script(reply.text("from the fallback's host"));
    // Answered by the chosen model itself: no "via" line.
    expect(await ask("hello")).toBe("from the fallback's host");
    expect(fallback.requests.map((body) => body.model)).toEqual(["fb-model"]);
    expect(authorization(fallback, 0)).toBe("Bearer sk-fallback");
    expect(primary.requests).toHaveLength(0);

    // /model reset: back to the primary's host and key.
    expect(await ask("/model reset")).toContain("back to the default model");
    primary.script(reply.text("from the primary"));
    expect(await ask("hello again")).toBe("from the primary");
    expect(primary.requests.map((body) => body.model)).toEqual(["test-model"]);
    expect(authorization(primary, 0)).toBe("Bearer sk-test");
    expect(fallback.requests).toHaveLength(1);
    primary.assertDone();
    fallback.assertDone();
  });

  it("the chosen fallback down: the chain goes on to the primary with llm.model, and says so", async () => {
    const { primary, fallback, ask } = await setup();
    await ask("/model fb-model");
    fallback.script(reply.error(503, "overloaded"));
    primary.script(reply.text("the primary stood in"));
    expect(await ask("hello")).toMatch(/^the primary stood in\n\n.*via test-model/);
    expect(primary.requests.map((body) => body.model)).toEqual(["test-model"]);
    primary.assertDone();
    fallback.assertDone();
  });

  it("an agent's model (chosen with /model) uses llm's endpoint, even when a fallback has the same name", async () => {
    const { primary, fallback, ask } = await setup(
      { fallbacks: [{ model: "shared-name", baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-unused" }] },
      { main: { model: "test-model" }, coder: { model: "shared-name" } },
    );
    expect(await ask("/model shared-name")).toContain("now uses shared-name");
    primary.script(reply.text("agent model on llm's host"));
    expect(await ask("hello")).toBe("agent model on llm's host");
    expect(primary.requests.map((body) => body.model)).toEqual(["shared-name"]);
    expect(authorization(primary, 0)).toBe("Bearer sk-test");
    expect(fallback.requests).toHaveLength(0);
    primary.assertDone();
  });
});
