import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 702;
const NOTES = "owner notes: water the tomatoes";

/**
 * A rule-of-two approval survives a crash (DESIGN.md → Durable turns: "a pending approval is asked again under the
 * same id"): an owner's turn reads a page, the model wants to POST, the owner is asked — and the process is
 * SIGKILLed while the prompt is open. After the restart the resumed turn asks again under the same id (still
 * after the page), the first press decides it, a second press is refused, and the POST goes out once.
 */
describe("shipped build: a rule-of-two approval pending at a SIGKILL", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let site: http.Server;
  let target: http.Server;
  let siteUrl = "";
  let targetUrl = "";
  const posted: string[] = [];
  let bot: ShippedBot;

  const listen = async (server: http.Server) => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    site = http.createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/plain" });
      response.end("Garden report: the tomatoes need water.");
    });
    target = http.createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk));
      request.on("end", () => {
        posted.push(`${request.method} ${request.url} ${body}`);
        response.end("ok");
      });
    });
    siteUrl = await listen(site);
    targetUrl = await listen(target);
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
        security: { ssrf: { allowHosts: ["127.0.0.1"] } },
        tools: { http: { enabled: true } },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
    for (const server of [site, target]) {
      server?.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
    }
  });

  const prompts = () =>
    telegram.callsOf("sendMessage").filter((call) => String(call.body.text).includes("Approval needed"));
  const buttonsOf = (call: { body: Record<string, unknown> }) => {
    const markup = call.body.reply_markup;
    const keyboard = (typeof markup === "string" ? JSON.parse(markup) : markup) as {
      inline_keyboard: Array<Array<{ callback_data: string }>>;
    };
    return keyboard.inline_keyboard.flat().map((button) => button.callback_data);
  };
  const press = (data: string, id: string) =>
    telegram.pushUpdate({
      callback_query: {
        id,
        from: { id: OWNER, is_bot: false, first_name: "Owner" },
        chat_instance: "1",
        data,
        message: {
          message_id: 9_001,
          date: Math.floor(Date.now() / 1000),
          chat: { id: OWNER, type: "private" },
          text: "…",
        },
      },
    });

  it("is asked again under the same id after the restart, decided once, and the POST goes out once", async () => {
    let results: string[] = [];
    llm.script(
      reply.toolCalls([{ name: "web_fetch", arguments: { url: `${siteUrl}/report` } }]),
      reply.toolCalls([
        { name: "http_request", arguments: { url: `${targetUrl}/log`, method: "POST", body: NOTES } },
      ]),
    );
    telegram.pushMessage({
      chat: { id: OWNER, type: "private" },
      from: { id: OWNER },
      text: `Read ${siteUrl}/report and log it`,
    });
    const first = await waitFor(() => prompts()[0], "the approval prompt", 20_000);
    expect(String(first.body.text)).toContain(
      `untrusted.non_get: untrusted content, after reading ${siteUrl}/report`,
    );
    const approve = buttonsOf(first).find((data) => data.startsWith("approve:"))!;
    expect(approve).toBeDefined();

    // The prompt is marked sent before the kill (else the outbox would rightly send it again after the restart).
    const db = new Database(path.join(bot.dataDir, "magpie.db"), { readonly: true });
    try {
      await waitFor(
        () =>
          db.prepare("SELECT count(*) FROM outbox WHERE status = 'pending'").pluck().get() === 0 || undefined,
        "the prompt marked sent",
      );
    } finally {
      db.close();
    }
    await bot.kill();
    llm.script(
      reply.text("Logged.", (body: ChatRequestBody) => {
        results = body.messages
          .filter((message) => message.role === "tool")
          .map((message) => String(message.content));
      }),
    );
    await bot.relaunch();

    const again = await waitFor(() => prompts()[1], "the prompt asked again", 20_000);
    // Same id, and still the rule of two's question (the resumed turn still knows it read the page).
    expect(buttonsOf(again)).toContain(approve);
    expect(String(again.body.text)).toContain(`after reading ${siteUrl}/report`);
    expect(posted).toEqual([]);
    press(approve, "cb-1");
    await waitFor(() => telegram.sentTexts().includes("Logged.") || undefined, "the answer", 20_000);
    expect(posted).toEqual([`POST /log ${NOTES}`]);
    expect(results).toHaveLength(2);
    // Decided once: pressing again decides nothing and sends nothing.
    const before = telegram.callsOf("sendMessage").length;
    press(approve, "cb-2");
    await waitFor(
      () => telegram.callsOf("answerCallbackQuery").find((call) => call.body.callback_query_id === "cb-2"),
      "the second press answered",
      20_000,
    );
    const refusal = await waitFor(
      () => telegram.sentTexts().find((text) => text.includes(`Approval ${approve.slice(8)} is already`)),
      "the second press refused",
      20_000,
    );
    expect(refusal).toContain("already approved");
    expect(posted).toHaveLength(1);
    expect(prompts()).toHaveLength(2);
    expect(telegram.callsOf("sendMessage").length - before).toBe(1);
    llm.assertDone();
  }, 90_000);
});
