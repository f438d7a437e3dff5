import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 601;
const OTHER_OWNER = 602;
const STRANGER = 699;

describe("shipped build: outcomes, progress notes and magpie trace", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    bot = await ShippedBot.start({
      config: {
        llm: {
          baseUrl: llm.url,
          apiKey: "sk-test",
          model: "test-model",
          maxRetries: 0,
          prices: { "test-model": { input: 3, output: 15 } },
        },
        // The 503 below is the failed message: answered with its notice at once, not waited out.
        agent: { streaming: false, progressNoticeSecs: 1, retryOutageForSecs: 0 },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER, OTHER_OWNER],
          },
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  const dm = (id: number, text: string) =>
    telegram.pushMessage({ chat: { id, type: "private" }, from: { id }, text });

  it("answers, fails with a notice, notes a long turn, alerts once about a blocked chat; trace tells each", async () => {
    // Answered, through a tool.
    llm.script(
      reply.toolCalls([{ name: "file_list", arguments: { path: "." } }]),
      reply.text("The workspace is empty."),
    );
    const answered = dm(OWNER, "what is in my workspace?");
    await waitFor(() => telegram.sentTexts().includes("The workspace is empty."), "the answer", 20_000);

    // Failed: the model is down; the chat is told why.
    llm.script(reply.error(503, "upstream down"));
    dm(OWNER, "and the weather?");
    await waitFor(
      () => telegram.sentTexts().some((text) => /language model/i.test(text)),
      "the failure notice",
      20_000,
    );

    // Long: one progress note before the answer.
    llm.script(reply.delay(2_500, reply.text("Took a while.")));
    dm(OWNER, "think hard");
    await waitFor(() => telegram.sentTexts().includes("Took a while."), "the slow answer", 20_000);
    const texts = telegram.sentTexts();
    expect(texts.filter((text) => text.startsWith("still working"))).toEqual([
      "still working — waiting for the model",
    ]);
    expect(texts.indexOf("still working — waiting for the model")).toBeLessThan(
      texts.indexOf("Took a while."),
    );

    // Undeliverable: the other owner blocked the bot; the first owner is told once, in their DM.
    llm.script(reply.text("You will never see this."), reply.text("Nor this."));
    telegram.failNext("sendMessage", 403, "Forbidden: bot was blocked by the user");
    dm(OTHER_OWNER, "hello?");
    await waitFor(
      () => telegram.sentTexts().some((text) => text.includes("can't deliver replies")),
      "the alert",
      20_000,
    );
    telegram.failNext("sendMessage", 403, "Forbidden: bot was blocked by the user");
    dm(OTHER_OWNER, "hello again?");
    await waitFor(
      async () => (await bot.cli(["trace", "last"])).stdout.includes("outcome: undeliverable"),
      "the second",
      20_000,
    );
    const alerts = telegram
      .callsOf("sendMessage")
      .filter((call) => String(call.body.text).includes("can't deliver"));
    expect(alerts).toHaveLength(1);
    expect(String(alerts[0]!.body.chat_id)).toBe(String(OWNER));
    expect(telegram.callsOf("sendMessage").filter((call) => call.failed)).toHaveLength(2);

    // A stranger: refused (a pairing code), kept without their text.
    const strangerMessage = dm(STRANGER, "stranger-secret-words");
    await waitFor(
      async () => (await bot.cli(["trace", "--chat", `telegram:${STRANGER}`])).stdout.includes("refused"),
      "the refusal",
      20_000,
    );

    const first = await bot.cli(["trace", `telegram:${OWNER}:${answered}`]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("access: allowed");
    expect(first.stdout).toMatch(/llm chat test-model · \d+\+\d+ tokens · \$0\.\d+ · \d+ ms · ok/);
    expect(first.stdout).toMatch(/tool file_list · verdict allow · \d+ ms · ok/);
    expect(first.stdout).toMatch(
      /outbox \d+ \(reply\) · sent after 1 attempt\(s\) · 1 part\(s\) · platform ids \d+/,
    );
    expect(first.stdout).toContain("outcome: answered");
    // The README's example trace comes from here.
    process.stdout.write(`\n--- magpie trace (shipped) ---\n${first.stdout}--- end ---\n`);

    const chat = await bot.cli(["trace", "--chat", `telegram:${OWNER}`, "--json"]);
    const { messages } = JSON.parse(chat.stdout) as { messages: Array<{ outcome: string }> };
    expect(messages.map((message) => message.outcome)).toEqual(["answered", "failed", "answered"]);
    const blocked = await bot.cli(["trace", "last", "--json"]);
    expect(JSON.parse(blocked.stdout)).toMatchObject({ outcome: "undeliverable" });
    const stranger = await bot.cli(["trace", "--chat", `telegram:${STRANGER}`]);
    expect(stranger.stdout).toMatch(/refused\s+from 699/);
    expect(stranger.stdout).not.toContain("stranger-secret-words");

    // --json: every message has the same top-level fields, `outcome` among them; a refused one too.
    const json = async (query: string) => {
      const result = await bot.cli(["trace", query, "--json"]);
      expect(result.code, query).toBe(0);
      return JSON.parse(result.stdout) as Record<string, unknown>;
    };
    const answeredJson = await json(`telegram:${OWNER}:${answered}`);
    const shape = Object.keys(answeredJson).sort();
    expect(shape).toContain("outcome");
    const refusedJson = await json(`telegram:${STRANGER}:${strangerMessage}`);
    expect(Object.keys(refusedJson).sort()).toEqual(shape);
    expect(refusedJson).toMatchObject({
      inboxId: null,
      channel: "telegram",
      chatId: String(STRANGER),
      userId: String(STRANGER),
      text: null,
      outcome: "refused",
      access: { verdict: "pairing" },
      turns: [],
      deliveries: [],
    });
    expect(JSON.stringify(refusedJson)).not.toContain("stranger-secret-words");
    const refusedText = await bot.cli(["trace", `telegram:${STRANGER}:${strangerMessage}`]);
    // The platform's message id, as for every other message (not the stored <chatId>:<id>).
    expect(refusedText.stdout).toContain(
      `Message telegram:${STRANGER}:${strangerMessage} · from ${STRANGER}\n`,
    );
    expect(refusedText.stdout).toContain("outcome: refused");
    const outcomes: unknown[] = [refusedJson.outcome];
    for (const chatId of [OWNER, OTHER_OWNER]) {
      const listed = JSON.parse(
        (await bot.cli(["trace", "--chat", `telegram:${chatId}`, "--json"])).stdout,
      ) as {
        messages: Array<{ inboxId: number; outcome: string }>;
      };
      for (const message of listed.messages) {
        const traced = await json(String(message.inboxId));
        expect(Object.keys(traced).sort()).toEqual(shape);
        expect(traced.outcome).toBe(message.outcome);
        outcomes.push(traced.outcome);
      }
    }
    expect(new Set(outcomes)).toEqual(new Set(["answered", "failed", "undeliverable", "refused"]));
    const strangerChat = JSON.parse(
      (await bot.cli(["trace", "--chat", `telegram:${STRANGER}`, "--json"])).stdout,
    ) as { refused: Array<{ outcome: string }> };
    expect(strangerChat.refused.map((refusal) => refusal.outcome)).toEqual(["refused"]);

    const unknown = await bot.cli(["trace", "--verbose"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Usage: magpie trace");
  }, 120_000);
});
