import { afterEach, describe, expect, it } from "vitest";
import { defineFeature } from "../../src/app/feature.js";
import { compactHistory, recentWithinBudget } from "../../src/core/compaction.js";
import type { ChatModel, CompletionRequest } from "../../src/llm/types.js";
import { silentLogger } from "../../src/log/logger.js";
import type { StoredMessage } from "../../src/store/history.js";
import { Store } from "../../src/store/index.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe("history compaction", () => {
  it("never starts the kept window on a tool result (no orphaned tool messages)", () => {
    const stored: StoredMessage[] = [
      { id: 1, tokens: 10, message: { role: "user", content: "u1" } },
      {
        id: 2,
        tokens: 10,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c", type: "function", function: { name: "t", arguments: "{}" } }],
        },
      },
      { id: 3, tokens: 10, message: { role: "tool", tool_call_id: "c", content: "r" } },
      { id: 4, tokens: 10, message: { role: "assistant", content: "a1" } },
      { id: 5, tokens: 10, message: { role: "user", content: "u2" } },
      { id: 6, tokens: 10, message: { role: "assistant", content: "a2" } },
    ];
    expect(recentWithinBudget(stored, 35).map((item) => item.id)).toEqual([5, 6]);
    expect(recentWithinBudget(stored, 1000).map((item) => item.id)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("summarizes old turns past agent.historyTokens and keeps the summary in the system prompt", async () => {
    const summaries: string[] = [];
    const recorder = defineFeature({
      name: "compaction-recorder",
      setup: () => ({ hooks: [{ onCompacted: async ({ summary }) => void summaries.push(summary) }] }),
    });
    harness = await startTestApp({ config: { agent: { historyTokens: 100 } }, features: [recorder] });
    const { llm, channel, app } = harness;
    const long = "x".repeat(200);
    llm!.script(
      reply.text(`first answer ${long}`),
      reply.text("SUMMARY: the user said hello twice.", (body) => {
        expect(body.messages[0]!.content).toContain("Summarize the conversation");
        expect(body.tools).toBeUndefined();
      }),
      reply.text("third answer", (body) => {
        expect(body.messages[0]!.content).toContain("SUMMARY: the user said hello twice.");
      }),
    );
    await channel!.receive(`hello ${long}`);
    await channel!.waitForSent(1);
    await app.router.queues.idle();
    expect(summaries).toEqual(["SUMMARY: the user said hello twice."]);
    expect(app.store.history.summary("test:chat-1")).toBe("SUMMARY: the user said hello twice.");
    await channel!.receive("and again");
    await channel!.waitForSent(2);
    llm!.assertDone();
  });

  it("summarizes a backlog a part per turn, oldest first, never the whole of it in one request", async () => {
    // A session whose compactions a budget cap held back: 5,000 messages of 20 tokens, 100,000 tokens.
    const store = Store.open(":memory:");
    store.history.ensureSession("s", "main");
    store.history.append(
      "s",
      Array.from({ length: 5_000 }, (_, index) => ({
        message:
          index % 2 === 0
            ? { role: "user" as const, content: `backlog ${index}` }
            : { role: "assistant" as const, content: `answer ${index}` },
        tokens: 20,
      })),
    );
    const requests: CompletionRequest[] = [];
    const model: ChatModel = {
      complete: async (request) => {
        requests.push(request);
        return { content: `summary ${requests.length}`, toolCalls: [], finishReason: "stop" };
      },
    };
    const compact = () =>
      compactHistory({
        history: store.history,
        sessionKey: "s",
        model,
        modelName: "m",
        budget: 400,
        logger: silentLogger(),
      });
    // Four budgets (1,600 tokens) of the oldest messages: 80 of them.
    expect((await compact())?.removed).toBe(80);
    const transcript = String(requests[0]!.messages[1]!.content);
    expect(transcript).toContain("backlog 0");
    expect(transcript).toContain("answer 79");
    expect(transcript).not.toContain("backlog 80");
    // The next one goes on where it stopped, from the summary so far.
    expect((await compact())?.removed).toBe(80);
    const next = String(requests[1]!.messages[1]!.content);
    expect(next).toContain("Earlier summary:\nsummary 1");
    expect(next).toContain("backlog 80");
    expect(store.history.stats("s").messages).toBe(5_000 - 160);
    // The newest half budget always stays.
    expect(store.history.newest("s", 200).messages.at(-1)!.message.content).toBe("answer 4999");
    store.close();
  });
});
