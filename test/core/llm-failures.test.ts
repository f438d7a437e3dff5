import { afterEach, describe, expect, it } from "vitest";
import { NO_LLM_REPLY } from "../../src/core/no-llm.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe("LLM failures become a short reply, never a crash or silence", () => {
  const cases: Array<[string, ReturnType<typeof reply.error>, RegExp]> = [
    ["401", reply.error(401, "invalid api key"), /rejected the API key \(401\).*OPENAI_API_KEY/],
    ["404 model", reply.error(404, "model not found"), /model "test-model" was not found.*MAGPIE_MODEL/],
    ["429", reply.error(429, "rate limited"), /rate-limiting or out of quota \(429\)/],
    ["500", reply.error(500, "boom"), /internal error \(HTTP 500\)/],
    ["503", reply.error(503, "overloaded"), /internal error \(HTTP 503\)/],
  ];
  for (const [name, step, expected] of cases) {
    it(`maps ${name}`, async () => {
      harness = await startTestApp();
      harness.llm!.script(step);
      await harness.channel!.receive("hello");
      const [sent] = await harness.channel!.waitForSent(1);
      expect(sent!.message.text).toMatch(expected);
      harness.llm!.assertDone();
    });
  }

  it("maps a timeout (llm.timeoutMs)", async () => {
    harness = await startTestApp({ config: { llm: { timeoutMs: 300 } } });
    harness.llm!.script(reply.hang());
    await harness.channel!.receive("hello");
    const [sent] = await harness.channel!.waitForSent(1);
    expect(sent!.message.text).toMatch(/did not answer within 300 ms \(llm\.timeoutMs\)/);
  });

  it("maps an unreachable endpoint", async () => {
    harness = await startTestApp({
      llm: false,
      config: { llm: { baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-x" } },
    });
    await harness.channel!.receive("hello");
    const [sent] = await harness.channel!.waitForSent(1);
    expect(sent!.message.text).toMatch(/couldn't reach the language model at http:\/\/127\.0\.0\.1:9\/v1/);
  });

  it("a turn that fails after a tool ran keeps the call and its result in history: the next turn's model sees it was done", async () => {
    harness = await startTestApp({ config: { agents: { main: { toolSet: ["file_append"] } } } });
    let seen: ChatRequestBody["messages"] = [];
    harness.llm!.script(
      reply.toolCalls([{ id: "c1", name: "file_append", arguments: { path: "log.txt", content: "A\n" } }]),
      reply.error(401, "invalid api key"),
      reply.text("noted", (body) => {
        seen = body.messages;
      }),
    );
    await harness.channel!.receive("append A to log.txt");
    const [failed] = await harness.channel!.waitForSent(1);
    expect(failed!.message.text).toMatch(/rejected the API key/);
    await harness.channel!.receive("did it work?");
    await harness.channel!.waitForSent(2);
    const asked = seen.find((message) => message.role === "assistant" && message.tool_calls?.length);
    expect(JSON.stringify(asked?.tool_calls)).toContain('"name":"file_append"');
    const result = seen.find((message) => message.role === "tool" && message.tool_call_id === "c1");
    expect(String(result?.content)).toContain("log.txt");
    // The failure the chat was told follows them, so the model knows the turn ended there.
    expect(seen.at(-2)).toMatchObject({ role: "assistant" });
    expect(String(seen.at(-2)?.content)).toMatch(/rejected the API key/);
    expect(seen.at(-1)).toMatchObject({ role: "user", content: "did it work?" });
    harness.llm!.assertDone();
  });

  it("keeps working after a failure (the next message is answered)", async () => {
    harness = await startTestApp();
    harness.llm!.script(reply.error(500, "boom"), reply.text("back again"));
    await harness.channel!.receive("one");
    await harness.channel!.waitForSent(1);
    await harness.channel!.receive("two");
    await harness.channel!.waitForSent(2);
    expect(harness.channel!.texts()[1]).toBe("back again");
  });
});

describe("no-LLM mode", () => {
  it("runs /help /status /reset /stop and explains how to configure an LLM for free text", async () => {
    harness = await startTestApp({ llm: false });
    const { channel } = harness;
    for (const text of ["/help", "/status", "/reset", "/stop", "hello there"]) await channel!.receive(text);
    await channel!.waitForSent(5);
    const [help, status, reset, stop, free] = channel!.texts();
    expect(help).toContain("/status");
    expect(help).toContain("/reset");
    expect(status).toContain("Model: none configured");
    expect(status).toContain("test: connected");
    expect(reset).toContain("history cleared");
    expect(stop).toBe("Nothing is running.");
    expect(free).toBe(NO_LLM_REPLY);
    expect(free).toContain("OPENAI_API_KEY");
  });

  it("answers an unknown command with a pointer to /help", async () => {
    harness = await startTestApp({ llm: false });
    await harness.channel!.receive("/frobnicate now");
    const [sent] = await harness.channel!.waitForSent(1);
    expect(sent!.message.text).toBe("Unknown command /frobnicate. Send /help for the list.");
  });
});
