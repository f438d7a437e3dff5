import { afterEach, describe, expect, it } from "vitest";
import { memoryFeature } from "../../src/app/memory-feature.js";
import { MEMORY_INSTRUCTION } from "../../src/memory/recall-prompt.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

const systemPrompt = (body: { messages: Array<{ role: string; content?: string | null }> }): string =>
  body.messages.find((message) => message.role === "system")?.content ?? "";

describe("memory in a running app", () => {
  it("the model stores a fact with memory_store; a later turn gets it recalled in the system prompt", async () => {
    harness = await startTestApp({
      features: [memoryFeature],
      config: { llm: { embeddingModel: "embed-small" } },
    });
    const { llm, channel } = harness;
    llm!.script(
      reply.toolCalls(
        [
          {
            name: "memory_store",
            arguments: { key: "owner.coffee", content: "The owner drinks flat whites." },
          },
        ],
        (body) => {
          expect(systemPrompt(body)).toContain(MEMORY_INSTRUCTION);
          expect(body.tools?.map((tool) => tool.function.name)).toEqual(
            expect.arrayContaining(["memory_store", "memory_recall", "memory_forget"]),
          );
        },
      ),
      reply.text("Noted.", (body) => {
        expect(JSON.parse(body.messages.at(-1)!.content!)).toMatchObject({ ok: true, action: "created" });
      }),
    );
    await channel!.receive("I only drink flat whites, remember that.");
    await channel!.waitForSent(1);

    await channel!.receive("/reset");
    await channel!.waitForSent(2);

    llm!.script(
      reply.text("A flat white.", (body) => {
        expect(systemPrompt(body)).toContain("owner.coffee: The owner drinks flat whites.");
      }),
    );
    await channel!.receive("Which coffee should you order for me?");
    const sent = await channel!.waitForSent(3);
    expect(sent[2]!.message.text).toBe("A flat white.");
    llm!.assertDone();
    expect(llm!.embeddingRequests.map((request) => request.input[0])).toEqual(
      expect.arrayContaining(["The owner drinks flat whites.", "Which coffee should you order for me?"]),
    );

    await channel!.receive("/memory coffee");
    const listing = await channel!.waitForSent(4);
    expect(listing[3]!.message.text).toContain("owner.coffee");
  });

  it("keeps the compaction summary as a conversation memory that is recalled after /reset", async () => {
    harness = await startTestApp({ features: [memoryFeature], config: { agent: { historyTokens: 100 } } });
    const { llm, channel, app } = harness;
    const long = "x".repeat(200);
    llm!.script(
      reply.text(`Sure ${long}`),
      reply.text("SUMMARY: the owner planned a trip to Trondheim in June."),
    );
    await channel!.receive(`Plan my Trondheim trip ${long}`);
    await channel!.waitForSent(1);
    await app.router.queues.idle();

    await channel!.receive("/reset");
    await channel!.waitForSent(2);
    llm!.script(
      reply.text("In June.", (body) => {
        expect(body.messages[0]!.content).toMatch(
          /conversation:test:chat-1:[^ ]+ \(conversation, [\d-]+\): SUMMARY: the owner planned a trip to Trondheim/,
        );
      }),
    );
    await channel!.receive("When was the Trondheim trip again?");
    await channel!.waitForSent(3);
    llm!.assertDone();
  });

  it("/remember, /memory and /forget work with no LLM configured", async () => {
    harness = await startTestApp({ features: [memoryFeature], llm: false });
    const { channel } = harness;
    await channel!.receive("/remember The spare key is under the blue pot");
    expect((await channel!.waitForSent(1))[0]!.message.text).toContain(
      "Remembered as `note.the-spare-key-is-under-the`",
    );
    await channel!.receive("/memory spare key");
    expect((await channel!.waitForSent(2))[1]!.message.text).toContain("The spare key is under the blue pot");
    await channel!.receive("/forget note.the-spare-key-is-under-the");
    expect((await channel!.waitForSent(3))[2]!.message.text).toBe(
      "Forgot `note.the-spare-key-is-under-the`.",
    );
  });
});
