import { afterEach, describe, expect, it } from "vitest";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { testToolNames, testTools } from "../helpers/test-tools.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

const withTools = { agents: { main: { toolSet: testToolNames } } };

describe("agent turn", () => {
  it("runs a full turn with two tool calls and persists history", async () => {
    harness = await startTestApp({ extraTools: testTools, config: withTools });
    const { llm, channel, app } = harness;
    llm!.script(
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 2, b: 3 } }], (body) => {
        expect(body.tools?.map((tool) => tool.function.name)).toEqual(
          expect.arrayContaining(["add_numbers", "echo"]),
        );
        expect(body.messages.at(-1)).toMatchObject({ role: "user", content: "what is 2+3, echoed?" });
      }),
      reply.toolCalls([{ name: "echo", arguments: { text: "5" } }], (body) => {
        const toolMessage = body.messages.at(-1);
        expect(toolMessage).toMatchObject({ role: "tool" });
        expect(JSON.parse(toolMessage!.content as string)).toEqual({ sum: 5 });
      }),
      reply.text("The answer is 5.", (body) => {
        expect(body.messages.at(-1)).toMatchObject({ role: "tool", content: "echo: 5" });
      }),
    );
    await channel!.receive("what is 2+3, echoed?");
    const sent = await channel!.waitForSent(1);
    expect(sent[0]!.message.text).toBe("The answer is 5.");
    expect(sent[0]!.target.replyToMessageId).toMatch(/^in-/);
    llm!.assertDone();

    const history = app.store.history.load("test:chat-1").map((item) => item.message.role);
    expect(history).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
    const audit = app.store.audit.recent(10).map((entry) => entry.tool);
    expect(audit).toEqual(["echo", "add_numbers"]);
  });

  it("sends the model a readable error for invalid tool arguments and unknown tools", async () => {
    harness = await startTestApp({ extraTools: testTools, config: withTools });
    const { llm, channel } = harness;
    llm!.script(
      reply.toolCalls([
        { name: "add_numbers", arguments: { a: "two", b: 3 } },
        { name: "rm_rf", arguments: {} },
        { name: "always_fails", arguments: {} },
      ]),
      reply.text("Sorry.", (body) => {
        const results = body.messages
          .filter((message) => message.role === "tool")
          .map((m) => JSON.parse(m.content!));
        expect(results[0].error.code).toBe("tool.invalid_arguments");
        expect(results[0].error.message).toContain("a:");
        expect(results[1].error.code).toBe("tool.not_available");
        expect(results[2]).toEqual({
          ok: false,
          error: { code: "test.refused", message: "Refused by the test guard. Try something else." },
        });
      }),
    );
    await channel!.receive("do things");
    await channel!.waitForSent(1);
    llm!.assertDone();
  });

  it("stops at agent.maxIterations with an explanation", async () => {
    harness = await startTestApp({
      extraTools: testTools,
      config: { ...withTools, agent: { maxIterations: 2 } },
    });
    const { llm, channel } = harness;
    llm!.script(
      reply.toolCalls([{ name: "echo", arguments: { text: "a" } }]),
      reply.toolCalls([{ name: "echo", arguments: { text: "b" } }]),
    );
    await channel!.receive("loop forever");
    const [first] = await channel!.waitForSent(1);
    expect(first!.message.text).toContain("agent.maxIterations");
    llm!.assertDone();
  });

  it("streams a draft on channels that can edit, then edits it into the final answer", async () => {
    const { RecordingChannel } = await import("../helpers/recording-channel.js");
    const channel = new RecordingChannel("test", { edit: true });
    harness = await startTestApp({ channel, config: { agent: { streaming: true } } });
    const long = "This is a fairly long streamed answer that goes past the draft threshold easily.";
    harness.llm!.script(reply.text(long, (body) => expect(body.stream).toBe(true)));
    await channel.receive("stream please");
    await channel.waitForSent(2);
    expect(channel.sent[0]!.message.text).toMatch(/ …$/);
    expect(channel.sent[1]!.message).toMatchObject({ text: long, editMessageId: channel.sent[0]!.id });
    harness.llm!.assertDone();
  });
});
