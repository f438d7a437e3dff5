import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import type { ChatRequestBody } from "../fakes/openai.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import type { TestApp } from "../helpers/harness.js";
import { startTelegramApp } from "../helpers/telegram-app.js";

/** ask_question end to end: the real grammY client against the Telegram fake, a scripted LLM. */

const OWNER = { id: 777, first_name: "Alice" };
const OTHER_OWNER = { id: 778, first_name: "Bob" };

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

async function start(telegram: FakeTelegram, llm: OpenAiFake, dataDir?: string): Promise<TestApp> {
  const app = await startTelegramApp({
    telegram,
    access: { allowFrom: [OWNER.id, OTHER_OWNER.id] },
    app: { llm, ...(dataDir ? { dataDir } : {}) },
  });
  return app.testApp;
}

async function setup() {
  const telegram = await new FakeTelegram().start();
  cleanup.push(() => telegram.close());
  const llm = await startOpenAiFake();
  cleanup.push(() => llm.close());
  const testApp = await start(telegram, llm);
  cleanup.push(() => testApp.stop({ keepLlm: true }));
  return { telegram, llm, testApp };
}

const dm = (telegram: FakeTelegram, from: { id: number; first_name: string }, text: string) =>
  telegram.pushMessage({ chat: { id: from.id, type: "private" }, from, text });

const textsTo = (telegram: FakeTelegram, chatId: number) =>
  telegram
    .callsOf("sendMessage")
    .filter((call) => !call.failed && String(call.body.chat_id) === String(chatId))
    .map((call) => call.body);

const question = {
  prompt: "Deploy to which environment?",
  options: [
    { id: "prod", label: "Production" },
    { id: "stg", label: "Staging" },
  ],
};

/** The JSON the model got back from the ask_question call. */
function toolAnswer(body: ChatRequestBody): unknown {
  const result = body.messages.findLast((message) => message.role === "tool");
  return JSON.parse(String(result?.content));
}

async function askedQuestion(telegram: FakeTelegram, chatId: number) {
  return waitFor(
    () => textsTo(telegram, chatId).find((body) => String(body.text).includes(question.prompt)),
    "the question",
  );
}

describe("ask_question in chat", () => {
  it("answered by a button: the tool returns the option", async () => {
    const { telegram, llm } = await setup();
    let answer: unknown;
    llm.script(
      reply.toolCalls([{ name: "ask_question", arguments: question }]),
      reply.text("deploying to staging", (body) => {
        answer = toolAnswer(body);
      }),
    );
    dm(telegram, OWNER, "deploy it");
    const asked = await askedQuestion(telegram, OWNER.id);
    expect(String(asked.text)).toContain("1. Production");
    const keyboard = (asked.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> })
      .inline_keyboard;
    telegram.pushUpdate({
      callback_query: {
        id: "cb-1",
        from: { ...OWNER, is_bot: false },
        chat_instance: "ci",
        data: keyboard[1]![0]!.callback_data,
        message: { message_id: 9, date: 0, chat: { id: OWNER.id, type: "private" }, text: "q" },
      },
    });
    await waitFor(
      () => textsTo(telegram, OWNER.id).some((body) => body.text === "deploying to staging"),
      "the reply",
    );
    expect(answer).toEqual({ answer: "Staging", option_id: "stg" });
    llm.assertDone();
  });

  it("answered by a typed number, then by custom text — neither queues a new turn", async () => {
    const { telegram, llm } = await setup();
    const answers: unknown[] = [];
    llm.script(
      reply.toolCalls([{ name: "ask_question", arguments: question }]),
      reply.text("first done", (body) => void answers.push(toolAnswer(body))),
      reply.toolCalls([{ name: "ask_question", arguments: question }]),
      reply.text("second done", (body) => void answers.push(toolAnswer(body))),
    );
    dm(telegram, OWNER, "deploy it");
    await askedQuestion(telegram, OWNER.id);
    dm(telegram, OWNER, "1");
    await waitFor(() => textsTo(telegram, OWNER.id).some((body) => body.text === "first done"), "first");
    dm(telegram, OWNER, "again");
    await waitFor(
      () =>
        textsTo(telegram, OWNER.id).filter((body) => String(body.text).includes(question.prompt)).length ===
        2,
      "the second question",
    );
    dm(telegram, OWNER, "both, staging first");
    await waitFor(() => textsTo(telegram, OWNER.id).some((body) => body.text === "second done"), "second");
    expect(answers).toEqual([{ answer: "Production", option_id: "prod" }, { answer: "both, staging first" }]);
    expect(llm.requests).toHaveLength(4);
    llm.assertDone();
  });

  it("times out with {answer: null, reason: 'timeout'}", async () => {
    const { telegram, llm } = await setup();
    let answer: unknown;
    llm.script(
      reply.toolCalls([{ name: "ask_question", arguments: { ...question, timeout_secs: 1 } }]),
      reply.text("nobody answered", (body) => {
        answer = toolAnswer(body);
      }),
    );
    dm(telegram, OWNER, "deploy it");
    await waitFor(
      () => textsTo(telegram, OWNER.id).some((body) => body.text === "nobody answered"),
      "the reply after the timeout",
      5_000,
    );
    expect(answer).toEqual({ answer: null, reason: "timeout" });
  });

  it("a restart with a pending question resumes the turn: the model hears the question's outcome is unknown, one answer, no 'interrupted'", async () => {
    const telegram = await new FakeTelegram().start();
    cleanup.push(() => telegram.close());
    const llm = await startOpenAiFake();
    cleanup.push(() => llm.close());
    const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-question-restart-"));
    cleanup.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const first = await start(telegram, llm, dataDir);
    llm.script(reply.toolCalls([{ name: "ask_question", arguments: question }]));
    dm(telegram, OWNER, "deploy it");
    await askedQuestion(telegram, OWNER.id);
    await first.stop({ keepData: true, keepLlm: true });
    const before = textsTo(telegram, OWNER.id).length;

    llm.script(
      reply.text("I was restarted while waiting for your answer; tell me again which target.", (body) => {
        const tool = body.messages.find((message) => message.role === "tool");
        expect(String(tool?.content)).toContain("tool.outcome_unknown");
      }),
    );
    const second = await start(telegram, llm, dataDir);
    cleanup.push(() => second.stop({ keepLlm: true }));
    await waitFor(() => textsTo(telegram, OWNER.id).length > before, "the answer");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = textsTo(telegram, OWNER.id).slice(before);
    expect(after).toHaveLength(1);
    expect(String(after[0]!.text)).toContain("tell me again");
    expect(String(after[0]!.text)).not.toContain("interrupted");
    llm.assertDone();
  });
});
