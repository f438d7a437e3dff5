import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ChatRequestBody } from "../fakes/openai.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { testTools } from "../helpers/test-tools.js";

let running: TestApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

const lastToolResult = (body: ChatRequestBody) =>
  String(body.messages.findLast((message) => message.role === "tool")?.content ?? "");

async function app(config: Record<string, unknown> = {}, authority?: "guest") {
  running = await startTestApp({
    extraTools: testTools,
    config,
    ...(authority === "guest"
      ? { authority: { roleOf: () => "guest" as const, mayDeliver: () => false } }
      : {}),
  });
  return running;
}

describe("loop guard", () => {
  it("the same tool call a third time in one turn ends the turn with a message", async () => {
    const { llm, channel } = await app();
    const same = { name: "add_numbers", arguments: { a: 1, b: 2 } };
    llm!.script(
      reply.toolCalls([same]),
      // Same call, keys in another order: still the same call.
      reply.toolCalls([{ name: "add_numbers", arguments: { b: 2, a: 1 } }]),
      reply.toolCalls([same]),
    );
    await channel!.receive("add forever");
    const [sent] = await channel!.waitForSent(1);
    expect(sent!.message.text).toMatch(/same tool call \(add_numbers.*3 times.*loop/);
    expect(llm!.requests).toHaveLength(3);
    llm!.assertDone();
  });
});

describe("tolerant tool calls", () => {
  it("repairs broken argument JSON (single quotes, trailing comma, missing brace) before validation", async () => {
    const { llm, channel } = await app();
    llm!.script(
      reply.toolCalls([{ name: "add_numbers", arguments: "{'a': 2, 'b': 3," }]),
      reply.text("five", (body) => expect(lastToolResult(body)).toContain('"sum": 5')),
    );
    await channel!.receive("2+3?");
    await channel!.waitForSent(1);
    llm!.assertDone();
  });

  it("what can't be repaired goes back to the model as an error it can act on", async () => {
    const { llm, channel } = await app();
    llm!.script(
      reply.toolCalls([{ name: "add_numbers", arguments: "add two and three please" }]),
      reply.text("sorry", (body) =>
        expect(lastToolResult(body)).toMatch(/tool\.(invalid_json|invalid_arguments)/),
      ),
    );
    await channel!.receive("2+3?");
    await channel!.waitForSent(1);
    llm!.assertDone();
  });

  it("text tool calls are accepted only with llm.textToolCalls: true", async () => {
    const written =
      'Let me add.\n<tool_call>{"name": "add_numbers", "arguments": {"a": 4, "b": 5}}</tool_call>';
    const on = await app({ llm: { textToolCalls: true } });
    on.llm!.script(
      reply.text(written),
      reply.text("nine", (body) => expect(lastToolResult(body)).toContain('"sum": 9')),
    );
    await on.channel!.receive("4+5?");
    const [answer] = await on.channel!.waitForSent(1);
    expect(answer!.message.text).toBe("nine");
    on.llm!.assertDone();
    await on.stop();

    const off = await app();
    off.llm!.script(reply.text(written));
    await off.channel!.receive("4+5?");
    const [plain] = await off.channel!.waitForSent(1);
    expect(plain!.message.text).toContain("<tool_call>");
    off.llm!.assertDone();
  });

  it("a fenced JSON call from a guest's turn gets the guest's (empty) tool set", async () => {
    const { llm, channel } = await app({ llm: { textToolCalls: true } }, "guest");
    llm!.script(
      reply.text('```json\n{"name": "add_numbers", "arguments": {"a": 1, "b": 1}}\n```'),
      reply.text("no tools for you", (body) =>
        expect(lastToolResult(body)).toMatch(/tool\.(not_in_tool_set|not_available)/),
      ),
    );
    await channel!.receive("1+1?");
    await channel!.waitForSent(1);
    llm!.assertDone();
  });
});

describe("/model", () => {
  it("lists, sets (persisted over a restart) and resets this chat's model; an unknown name is refused", async () => {
    const first = await app({ llm: { model: "main-model", fallbacks: [{ model: "small-model" }] } });
    const dataDir = first.dataDir;
    await first.channel!.receive("/model");
    await first.channel!.receive("/model nonsense");
    await first.channel!.receive("/model small-model");
    const texts = (await first.channel!.waitForSent(3)).map((entry) => entry.message.text);
    expect(texts[0]).toContain("This chat uses main-model");
    expect(texts[1]).toContain("not a configured model");
    expect(texts[2]).toContain("now uses small-model");
    await first.stop({ keepData: true, keepLlm: true });

    const llm = first.llm!;
    running = await startTestApp({
      dataDir,
      llm,
      extraTools: testTools,
      config: { llm: { model: "main-model", fallbacks: [{ model: "small-model" }] } },
    });
    llm.script(reply.text("hi from small", (body) => expect(body.model).toBe("small-model")));
    // A new channel instance numbers its messages from 1 again: give ids the first run didn't use.
    await running.channel!.receive("hello", { messageId: "after-1" });
    await running.channel!.waitForSent(1);
    await running.channel!.receive("/model reset", { messageId: "after-2" });
    llm.script(reply.text("hi from main", (body) => expect(body.model).toBe("main-model")));
    await running.channel!.receive("hello again", { messageId: "after-3" });
    await running.channel!.waitForSent(3);
    llm.assertDone();
    await running.stop();
    running = null;
    await llm.close();
  });

  it("a guest can't switch the model", async () => {
    const { channel, app: magpie } = await app({}, "guest");
    await channel!.receive("/model test-model");
    const [sent] = await channel!.waitForSent(1);
    expect(sent!.message.text).toBe("Only an owner can use /model.");
    expect(magpie.store.kv.get("model:test:chat-1", z.string())).toBeUndefined();
  });
});
