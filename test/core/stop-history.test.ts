import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runAgentTurn, type TurnJournal } from "../../src/core/agent-loop.js";
import type { ToolCallContext, ToolRuntime } from "../../src/core/tool-runtime.js";
import type { ChatMessage, ChatModel } from "../../src/llm/types.js";
import type { JournalStep } from "../../src/store/step-journal.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { slowToolRuns, testToolNames, testTools } from "../helpers/test-tools.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

/** Every assistant message with tool calls in a request has a result for each call right after it. */
function everyRoundComplete(messages: ReadonlyArray<Record<string, unknown>>): boolean {
  return messages.every((message, index) => {
    const calls = (message.tool_calls ?? []) as Array<{ id: string }>;
    const results = new Set<unknown>();
    for (const next of messages.slice(index + 1)) {
      if (next.role !== "tool") break;
      results.add(next.tool_call_id);
    }
    return calls.every((call) => results.has(call.id));
  });
}

describe("/stop keeps the completed tool rounds of the stopped turn in history", () => {
  it("ATTACK: a side effect done before /stop is in the next turn's request (call and result), so it is not done again", async () => {
    harness = await startTestApp({
      extraTools: testTools,
      config: { agents: { main: { toolSet: testToolNames } } },
    });
    const { llm, channel, app } = harness;
    let next: { messages: Array<Record<string, unknown>> } | undefined;
    llm!.script(
      // The side effect (a stand-in for file_append), done and answered; then a slow call the owner stops.
      reply.toolCalls([{ id: "call-append", name: "echo", arguments: { text: "line 42 appended" } }]),
      reply.toolCalls([{ id: "call-slow", name: "slow", arguments: { ms: 10_000 } }]),
      reply.text("Yes, line 42 was appended before you stopped me.", (body) => {
        next = body as unknown as typeof next;
      }),
    );
    const runsBefore = slowToolRuns.started;
    await channel!.receive("append line 42, then take a while");
    await vi.waitFor(() => expect(slowToolRuns.started).toBe(runsBefore + 1), { timeout: 10_000 });
    await channel!.receive("/stop");
    await channel!.waitForSent(1);
    expect(channel!.texts()).toEqual(["Stopped."]);
    await app.router.queues.idle();

    await channel!.receive("did the append happen?");
    await channel!.waitForSent(2);
    llm!.assertDone();
    const messages = next!.messages;
    // The completed round: the call and its result, in order, before the new question.
    const callAt = messages.findIndex((message) =>
      JSON.stringify(message.tool_calls ?? []).includes("call-append"),
    );
    expect(callAt).toBeGreaterThan(0);
    expect(messages[callAt + 1]).toMatchObject({
      role: "tool",
      tool_call_id: "call-append",
      content: expect.stringContaining("echo: line 42 appended"),
    });
    // The round the stop cut off has its result too ("stopped"): every round sent is complete.
    expect(messages.find((message) => message.tool_call_id === "call-slow")).toMatchObject({
      content: expect.stringContaining("slow aborted"),
    });
    expect(everyRoundComplete(messages)).toBe(true);
    expect(messages.slice(-2)).toMatchObject([
      { role: "assistant", content: "(This request was stopped before it finished.)" },
      { role: "user", content: "did the append happen?" },
    ]);
    expect(messages.filter((message) => message.role === "user").map((message) => message.content)).toEqual([
      "append line 42, then take a while",
      "did the append happen?",
    ]);
  });

  it("ATTACK: a half-finished round (a call without its result) is dropped; the completed round before it is kept", async () => {
    // A resumed turn stopped while it replays its journal: round 1 is complete, round 2 has one of its two results.
    const asked1 = {
      role: "assistant" as const,
      content: null,
      tool_calls: [
        { id: "a1", type: "function" as const, function: { name: "echo", arguments: '{"text":"one"}' } },
      ],
    };
    const asked2 = {
      role: "assistant" as const,
      content: null,
      tool_calls: [
        { id: "b1", type: "function" as const, function: { name: "echo", arguments: '{"text":"two"}' } },
        { id: "b2", type: "function" as const, function: { name: "echo", arguments: '{"text":"three"}' } },
      ],
    };
    const steps: JournalStep[] = [
      { kind: "llm", message: asked1, agent: "main", model: "m", at: 1 },
      { kind: "call", callId: "a1", at: 2 },
      { kind: "result", callId: "a1", output: "echo: one", at: 3 },
      { kind: "llm", message: asked2, agent: "main", model: "m", at: 4 },
      { kind: "call", callId: "b1", at: 5 },
      { kind: "result", callId: "b1", output: "echo: two", at: 6 },
    ];
    const journal: TurnJournal = { steps, write: () => {}, atomically: (write) => write(), now: () => 7 };
    const executed: string[] = [];
    const tools = {
      specs: () => [],
      execute: async (call: { id: string }) => {
        executed.push(call.id);
        return "ran";
      },
    } as unknown as ToolRuntime;
    const model = {
      complete: async () => {
        throw new Error("no LLM call after /stop");
      },
    } as unknown as ChatModel;
    const controller = new AbortController();
    controller.abort("stop");
    const outcome = await runAgentTurn(
      { model, tools, logger: pino({ level: "silent" }), maxIterations: 5, llm: { timeoutMs: 1_000 } },
      {
        agent: { name: "main", model: "m" } as never,
        systemPrompt: "system",
        history: [],
        userText: "do three echoes",
        toolNames: ["echo"],
        context: { signal: controller.signal, sessionKey: "test:chat-1" } as unknown as ToolCallContext,
        journal,
      },
    );
    expect(outcome.status).toBe("aborted");
    expect(executed).toEqual([]);
    const expected: ChatMessage[] = [
      { role: "user", content: "do three echoes" },
      asked1,
      { role: "tool", tool_call_id: "a1", content: "echo: one" },
      { role: "assistant", content: "(This request was stopped before it finished.)" },
    ];
    expect(outcome.newMessages).toEqual(expected);
  });
});
