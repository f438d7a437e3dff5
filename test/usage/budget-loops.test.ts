import { afterEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { startTelegramApp, type TelegramApp } from "../helpers/telegram-app.js";
import { testTools } from "../helpers/test-tools.js";

/**
 * Loops are cut (DESIGN.md → Models, failover and spend → Budgets): the same tool call a third time ends the turn,
 * and so does a refused call (tool set, guard, budget) the model keeps making — a turn whose calls are all refused
 * ends instead of asking the model until `agent.maxIterations`. Through Telegram with the scripted LLM.
 */

const OWNER = { id: 777, first_name: "Alice" };
const DM = { id: 777, type: "private" as const };

let running: TelegramApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

async function start(config: ConfigInput) {
  running = await startTelegramApp({
    access: { allowFrom: [OWNER.id] },
    config,
    app: { extraTools: testTools },
  });
  const { telegram } = running;
  const llm = running.testApp.llm!;
  const texts = () =>
    telegram
      .callsOf("sendMessage")
      .filter((call) => !call.failed && String(call.body.chat_id) === String(DM.id))
      .map((call) => String(call.body.text));
  /** Sends `text` as the owner and waits for the one reply. */
  const ask = async (text: string) => {
    telegram.pushMessage({ chat: DM, from: OWNER, text });
    await waitFor(() => texts().length > 0, "the reply");
    return texts()[0]!;
  };
  return { llm, ask, texts, app: running };
}

/** The tool results the model got back in a request, parsed. */
const toolResults = (body: ChatRequestBody) =>
  body.messages
    .filter((message) => message.role === "tool")
    .map((message) => JSON.parse(String(message.content)) as { ok?: boolean; refused?: boolean });

function auditRows(app: TelegramApp) {
  return app.testApp.app.store.db
    .prepare("SELECT tool, verdict, error_code AS code FROM audit ORDER BY id")
    .all() as Array<{ tool: string; verdict: string; code: string | null }>;
}

const NARROW: ConfigInput = {
  agent: { maxIterations: 8 },
  agents: { main: { toolSet: ["add_numbers", "file_read"] } },
};

describe("refused calls end the turn", () => {
  it("every call refused (tool set), different arguments each step: the turn ends after 3 steps, not maxIterations", async () => {
    const { llm, ask, texts } = await start(NARROW);
    // `echo` exists but is not in this agent's tool set: each call is refused at dispatch.
    for (let step = 1; step <= 8; step++)
      llm.script(reply.toolCalls([{ name: "echo", arguments: { text: `try ${step}` } }]));
    const text = await ask("echo something");
    expect(text).toMatch(/^I stopped: every tool call of the last 3 steps was refused/);
    expect(llm.requests).toHaveLength(3);
    // The model was told each time, and told it was a refusal.
    expect(toolResults(llm.requests[2]!)).toEqual([
      expect.objectContaining({ ok: false, refused: true }),
      expect.objectContaining({ ok: false, refused: true }),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(texts()).toHaveLength(1);
  });

  it("a refused call (guard) asked for again ends the turn before it is dispatched a second time", async () => {
    const { llm, ask, app } = await start(NARROW);
    llm.script(
      reply.toolCalls([{ name: "file_read", arguments: { path: "/etc/shadow" } }]),
      reply.toolCalls([{ name: "file_read", arguments: { path: "/etc/shadow" } }]),
      reply.toolCalls([{ name: "file_read", arguments: { path: "/etc/shadow" } }]),
      reply.text("gave up"),
    );
    const text = await ask("read the shadow file");
    expect(text).toMatch(/^I stopped: the model asked again for a call that was refused \(file_read/);
    expect(llm.requests).toHaveLength(2);
    const rows = auditRows(app).filter((row) => row.tool === "file_read");
    expect(rows).toHaveLength(1);
    expect(rows[0]!.verdict).toBe("deny");
  });

  it("a refusal the model works around does not end the turn", async () => {
    const { llm, ask } = await start(NARROW);
    llm.script(
      reply.toolCalls([{ name: "echo", arguments: { text: "a" } }]),
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 1, b: 2 } }]),
      reply.toolCalls([{ name: "echo", arguments: { text: "b" } }]),
      reply.toolCalls([{ name: "echo", arguments: { text: "c" } }]),
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 3, b: 4 } }]),
      reply.text("3 and 7"),
    );
    expect(await ask("add")).toBe("3 and 7");
    llm.assertDone();
  });

  it("the same allowed call a third time ends the turn with a message", async () => {
    const { llm, ask } = await start(NARROW);
    for (let step = 1; step <= 4; step++)
      llm.script(reply.toolCalls([{ name: "add_numbers", arguments: { a: 1, b: 2 } }]));
    const text = await ask("add");
    expect(text).toMatch(/same tool call \(add_numbers with the same arguments\) came 3 times/);
    expect(llm.requests).toHaveLength(3);
  });
});
