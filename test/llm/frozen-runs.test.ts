import { describe, expect, it } from "vitest";
import { freezeMessage, isFrozenMessage } from "../../src/llm/frozen-message.js";
import { redactingModel } from "../../src/llm/redacting-model.js";
import { chatRequestBytes } from "../../src/llm/request-body.js";
import type { ChatModel, CompletionRequest, RequestMessage } from "../../src/llm/types.js";
import { Redactor } from "../../src/log/redact.js";

/**
 * Issue 35, hot path: a turn's frozen messages (system prompt, history, the turn so far) are sent again at every step;
 * the redacted copies and the request bytes of the ones the conversation's last request started with are taken from
 * that request without a lookup per message. Every body must still be the SDK's, and nothing kept may hide a change.
 */
const SECRET = "correct-horse-battery-staple-42";

/** The body `chat.completions.create` builds and encodes. */
function sdkBody(request: CompletionRequest): string {
  return JSON.stringify({ model: request.model, messages: request.messages, stream: false });
}

function setUp() {
  const secrets = new Redactor();
  const sent: CompletionRequest[] = [];
  const bodies: string[] = [];
  const inner: ChatModel = {
    complete: async (request) => {
      sent.push(request);
      bodies.push(new TextDecoder().decode(chatRequestBytes(request, false)));
      return { content: "ok", toolCalls: [], finishReason: "stop" };
    },
  };
  const model = redactingModel(inner, secrets);
  const ask = async (messages: RequestMessage[]) => {
    await model.complete({ model: "m", messages });
    const last = sent.at(-1)!;
    // What was sent is the redacted request, byte for byte as the SDK would encode it.
    expect(bodies.at(-1)).toBe(sdkBody(last));
    return last;
  };
  return { secrets, sent, bodies, ask };
}

const step = (index: number): RequestMessage[] => [
  freezeMessage({
    role: "assistant",
    content: null,
    tool_calls: [
      { id: `c${index}`, type: "function", function: { name: "cron_list", arguments: `{"step":${index}}` } },
    ],
  }),
  freezeMessage({ role: "tool", tool_call_id: `c${index}`, content: `[] é 🐦 ${index}` }),
];

describe("a turn's frozen messages kept from its last request", () => {
  it("each step's request is the SDK's body and reuses the copies of the messages sent before", async () => {
    const { ask } = setUp();
    const system = freezeMessage({ role: "system", content: "You are Magpie. \u2028 half \ud83d" });
    const history: RequestMessage[] = [
      freezeMessage({ role: "user", content: "earlier" }),
      freezeMessage({ role: "assistant", content: "sure" }),
    ];
    const user = freezeMessage({ role: "user", content: "list my jobs" });
    let turn: RequestMessage[] = [system, ...history, user];
    const first = await ask(turn);
    for (let index = 1; index <= 3; index++) {
      turn = [...turn, ...step(index)];
      const next = await ask(turn);
      for (let kept = 0; kept < first.messages.length; kept++)
        expect(next.messages[kept]).toBe(first.messages[kept]);
    }
  });

  it("ATTACK: two conversations that start with the same message object, sent in turns, each get their own body", async () => {
    const { ask } = setUp();
    const system = freezeMessage({ role: "system", content: "shared prompt" });
    const one = [system, freezeMessage({ role: "user", content: "one" })];
    const two = [system, freezeMessage({ role: "user", content: "two" })];
    await ask(one);
    await ask(two);
    expect((await ask([...one, ...step(1)])).messages[1]!.content).toBe("one");
    expect((await ask([...two, ...step(2)])).messages[1]!.content).toBe("two");
    // A shorter request after a longer one (a retry without the last step).
    expect((await ask(two)).messages).toHaveLength(2);
  });

  it("ATTACK: a message that is not frozen whole, changed in place between two steps, is sent as it is now", async () => {
    const { ask } = setUp();
    const system = freezeMessage({ role: "system", content: "You are Magpie." });
    const loose: RequestMessage = { role: "user", content: "check the backup" };
    // Frozen itself, but not its tool calls: they can still change.
    const shallow = Object.freeze({
      role: "assistant" as const,
      content: null,
      tool_calls: [{ id: "c1", type: "function" as const, function: { name: "cron_list", arguments: "{}" } }],
    });
    expect(isFrozenMessage(shallow)).toBe(false);
    const after = freezeMessage({ role: "tool", tool_call_id: "c1", content: "[]" });
    await ask([system, loose, shallow, after]);
    loose.content = "delete the backup";
    shallow.tool_calls[0]!.function.arguments = '{"all":true}';
    const next = await ask([system, loose, shallow, after, ...step(2)]);
    expect(next.messages[1]!.content).toBe("delete the backup");
    expect(JSON.stringify(next.messages[2])).toContain('{\\"all\\":true}');
  });

  it("ATTACK: a secret added between two steps is redacted from the messages kept from the step before", async () => {
    const { secrets, ask } = setUp();
    const system = freezeMessage({ role: "system", content: "You are Magpie." });
    const user = freezeMessage({ role: "user", content: `my key is ${SECRET}` });
    const before = await ask([system, user]);
    expect(JSON.stringify(before.messages)).toContain(SECRET);
    secrets.add(SECRET);
    const next = await ask([system, user, ...step(1)]);
    expect(JSON.stringify(next.messages)).not.toContain(SECRET);
  });

  it("a frozen message can't be changed: writing to it or its tool calls throws", () => {
    const message = freezeMessage({
      role: "assistant",
      content: "a",
      tool_calls: [{ id: "c", type: "function", function: { name: "x", arguments: "{}" } }],
    });
    expect(isFrozenMessage(message)).toBe(true);
    expect(() => {
      (message as { content: string }).content = "b";
    }).toThrow(TypeError);
    expect(() => {
      message.tool_calls![0]!.function.arguments = "{1}";
    }).toThrow(TypeError);
    expect(() => message.tool_calls!.push(message.tool_calls![0]!)).toThrow(TypeError);
  });
});
