import { afterEach, describe, expect, it } from "vitest";
import { recentWithinBudget } from "../../src/core/compaction.js";
import type { StoredMessage } from "../../src/store/history.js";
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
    harness = await startTestApp({ config: { agent: { historyTokens: 100 } } });
    const { llm, channel, app } = harness;
    const long = "x".repeat(200);
    const summaries: string[] = [];
    app.context.addHooks({ onCompacted: async ({ summary }) => void summaries.push(summary) });
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
});
