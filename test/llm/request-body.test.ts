import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAiChatModel } from "../../src/llm/openai-model.js";
import { redactingModel } from "../../src/llm/redacting-model.js";
import { chatRequestBytes } from "../../src/llm/request-body.js";
import type { ChatModel, CompletionRequest, LlmToolSpec, RequestMessage } from "../../src/llm/types.js";
import { Redactor } from "../../src/log/redact.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";

/**
 * Issue 35, hot path: a request's JSON is made of each message's JSON kept between requests. It must be the body the
 * SDK would send, and what is kept must never hide a change.
 */
const tool: LlmToolSpec = {
  type: "function",
  function: { name: "cron_list", description: "List jobs", parameters: { type: "object", properties: {} } },
};

function history(): RequestMessage[] {
  return [
    { role: "system", content: 'You are Magpie. \u2028 "quoted" \\ é 🐦 half \ud83d' },
    { role: "user", content: "list my jobs" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "cron_list", arguments: '{"step":1}' } }],
    },
    { role: "tool", tool_call_id: "c1", content: "[]" },
  ];
}

/** The request's bytes as text (the parts are well-formed UTF-8 each: joined, they decode to the whole). */
const chatRequestJson = (request: CompletionRequest, stream: boolean) =>
  new TextDecoder("utf-8", { fatal: true }).decode(chatRequestBytes(request, stream));

/** The body `chat.completions.create` builds and encodes. */
function sdkBody(request: CompletionRequest, stream: boolean): string {
  return JSON.stringify({
    model: request.model,
    messages: request.messages,
    ...(request.tools?.length ? { tools: request.tools } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : { stream: false }),
  });
}

describe("the request body kept by message", () => {
  it("is byte for byte the SDK's body, the first time and from what was kept", () => {
    const messages = history();
    const shapes: CompletionRequest[] = [
      { model: "m", messages },
      { model: "m", messages, tools: [tool] },
      { model: "m", messages, tools: [tool], temperature: 0.2 },
      {
        model: "m",
        messages: [
          ...messages,
          {
            role: "user",
            content: [
              { type: "text", text: "this photo" },
              { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
            ],
          },
        ],
      },
    ];
    for (const request of shapes)
      for (const stream of [false, true]) {
        expect(chatRequestBytes(request, stream).equals(Buffer.from(sdkBody(request, stream)))).toBe(true);
        expect(chatRequestBytes(request, stream).equals(Buffer.from(sdkBody(request, stream)))).toBe(true);
        expect(chatRequestJson(request, stream)).toBe(sdkBody(request, stream));
      }
  });

  it("ATTACK: a message changed in place after a request is sent as it is now", () => {
    const messages = history();
    const request: CompletionRequest = { model: "m", messages, tools: [tool] };
    chatRequestJson(request, false);
    messages[1]!.content = "delete my jobs";
    const assistant = messages[2]!;
    if (assistant.role !== "assistant" || !assistant.tool_calls) throw new Error("shape");
    assistant.tool_calls[0]!.function.arguments = '{"step":2}';
    assistant.tool_calls.push({
      id: "c2",
      type: "function",
      function: { name: "cron_list", arguments: "{}" },
    });
    tool.function.description = "List every job";
    expect(chatRequestJson(request, false)).toBe(sdkBody(request, false));
    expect(chatRequestJson(request, false)).toContain("delete my jobs");
  });
});

describe("redacted copies kept by message", () => {
  const SECRET = "correct-horse-battery-staple-42";

  function setUp() {
    const secrets = new Redactor();
    const sent: CompletionRequest[] = [];
    const inner: ChatModel = {
      complete: async (request) => {
        sent.push(request);
        return { content: "ok", toolCalls: [], finishReason: "stop" };
      },
    };
    const model = redactingModel(inner, secrets);
    const ask = (messages: RequestMessage[]) => model.complete({ model: "m", messages });
    return { secrets, sent, ask };
  }

  it("the same message gives the same copy while nothing changed (so its JSON is kept too)", async () => {
    const { sent, ask } = setUp();
    const messages = history();
    await ask(messages);
    await ask([...messages, { role: "user", content: "next" }]);
    expect(sent[1]!.messages[1]).toBe(sent[0]!.messages[1]);
    expect(sent[1]!.messages[2]).toBe(sent[0]!.messages[2]);
  });

  it("ATTACK: a secret written into a kept message in place is redacted from the next request", async () => {
    const { secrets, sent, ask } = setUp();
    secrets.add(SECRET);
    const messages = history();
    await ask(messages);
    messages[1]!.content = `my key is ${SECRET}`;
    const assistant = messages[2]!;
    if (assistant.role !== "assistant" || !assistant.tool_calls) throw new Error("shape");
    assistant.tool_calls[0]!.function.arguments = JSON.stringify({ key: SECRET });
    await ask(messages);
    expect(JSON.stringify(sent[1]!.messages)).not.toContain(SECRET);
    expect(sent[1]!.messages[1]!.content).toBe(secrets.redact(`my key is ${SECRET}`));
  });

  it("ATTACK: a secret added after a message was kept is redacted from it in the next request", async () => {
    const { secrets, sent, ask } = setUp();
    const messages: RequestMessage[] = [{ role: "user", content: `my key is ${SECRET}` }];
    await ask(messages);
    expect(JSON.stringify(sent[0]!.messages)).toContain(SECRET);
    secrets.add(SECRET);
    await ask(messages);
    expect(JSON.stringify(sent[1]!.messages)).not.toContain(SECRET);
  });
});

describe("through the SDK to an OpenAI-compatible server", () => {
  let fake: OpenAiFake;
  beforeAll(async () => {
    fake = await startOpenAiFake();
  });
  afterAll(async () => {
    await fake.close();
  });

  it("posts the kept JSON as application/json, streaming and not, and reads both answers", async () => {
    const model = new OpenAiChatModel(new OpenAI({ apiKey: "k", baseURL: fake.url, maxRetries: 0 }));
    const messages = history();
    const request: CompletionRequest = { model: "gpt-test", messages, tools: [tool] };
    fake.script(reply.text("plain answer"), reply.text("streamed answer"));
    const plain = await model.complete(request);
    expect(plain.content).toBe("plain answer");
    const deltas: string[] = [];
    const streamed = await model.complete(request, { onTextDelta: (delta) => deltas.push(delta) });
    expect(streamed.content).toBe("streamed answer");
    expect(deltas.join("")).toBe("streamed answer");
    expect(fake.requests[0]).toEqual(JSON.parse(sdkBody(request, false)));
    expect(fake.requests[1]).toEqual(JSON.parse(sdkBody(request, true)));
    expect(fake.requestHeaders.map((headers) => headers["content-type"])).toEqual([
      "application/json",
      "application/json",
    ]);
    fake.assertDone();
  });
});
