import { describe, expect, it } from "vitest";
import { redactingModel, type TextRedactor } from "../../src/llm/redacting-model.js";
import type { ChatModel, CompletionRequest, RequestMessage } from "../../src/llm/types.js";
import { Redactor } from "../../src/log/redact.js";

/**
 * Issue 35, cost on the hot path: every LLM request carries the system prompt and the chat's history again. A text
 * already redacted under the same secrets is not redacted again — and a secret added between two requests is
 * redacted from all of the next one, history included.
 */
function setUp() {
  const secrets = new Redactor();
  const redacted: string[] = [];
  // Counts what reaches the real redactor.
  const counting: TextRedactor = {
    redact: (text) => {
      redacted.push(text);
      return secrets.redact(text);
    },
    get size() {
      return secrets.size;
    },
  };
  const sent: CompletionRequest[] = [];
  const inner: ChatModel = {
    complete: async (request) => {
      sent.push(request);
      return { content: "ok", toolCalls: [] } as unknown as Awaited<ReturnType<ChatModel["complete"]>>;
    },
  };
  const model = redactingModel(inner, counting);
  const ask = (messages: RequestMessage[]) =>
    model.complete({ model: "test-model", messages }, { signal: new AbortController().signal });
  const texts = () => sent.at(-1)!.messages.map((message) => message.content);
  const lastJson = () => JSON.stringify(sent.at(-1)!.messages);
  return { secrets, redacted, ask, texts, lastJson, sent };
}

// No credential shape: only the added secret redacts it.
const SECRET = "correct-horse-battery-staple-42";

describe("request redaction is kept while the secrets are unchanged", () => {
  it("ATTACK: the history sent again with the next request is not redacted again", async () => {
    const { redacted, ask } = setUp();
    const system: RequestMessage = { role: "system", content: "You are Magpie." };
    const first: RequestMessage = { role: "user", content: "check the backup" };
    await ask([system, first]);
    expect(redacted).toEqual(["You are Magpie.", "check the backup"]);
    await ask([
      system,
      first,
      { role: "assistant", content: "done" },
      { role: "user", content: "and the sensor" },
    ]);
    expect(redacted.slice(2)).toEqual(["done", "and the sensor"]);
  });

  it("a secret added between two requests is redacted from the whole next request, history included", async () => {
    const { secrets, ask, texts } = setUp();
    const history: RequestMessage[] = [
      { role: "system", content: "You are Magpie." },
      { role: "user", content: `my key is ${SECRET}` },
    ];
    await ask(history);
    expect(texts()[1]).toBe(`my key is ${SECRET}`);
    secrets.add(SECRET);
    await ask([...history, { role: "user", content: `again: ${SECRET}` }]);
    expect(texts().join("\n")).not.toContain(SECRET);
    expect(texts()[1]).toBe(secrets.redact(`my key is ${SECRET}`));
  });

  it("what is sent is what the redactor gives, kept or not (tool calls' arguments and image captions too)", async () => {
    const { secrets, ask, lastJson } = setUp();
    secrets.add(SECRET);
    const messages: RequestMessage[] = [
      { role: "user", content: [{ type: "text", text: `caption ${SECRET}` }] },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "shell", arguments: `{"k":"${SECRET}"}` } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: `out ${SECRET}` },
    ];
    await ask(messages);
    expect(lastJson()).not.toContain(SECRET);
    const first = lastJson();
    // The second time from what was kept: the same.
    await ask(messages);
    expect(lastJson()).toBe(first);
    expect(first).toContain(secrets.redact(`caption ${SECRET}`));
  });
});
