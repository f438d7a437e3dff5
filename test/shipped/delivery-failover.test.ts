import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { type OpenAiFake, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 503;
// The owner's own chat (a report may go only to a chat Magpie may post to), where the owner blocked the bot.
const BLOCKED_CHAT = OWNER;

/**
 * Delivery failover through the shipped build: a cron report to a Telegram chat that blocked the bot (403) goes
 * out through `delivery.fallback` — ntfy, real HTTP to a local server — with the report's text and its trace id.
 */
describe("shipped build: a cron report to a chat that blocked the bot fails over to ntfy", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let ntfy: NtfyFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    ntfy = await startNtfyFake();
    // The bot is blocked in the report's chat: the first sendMessage is refused for good.
    telegram.failNext("sendMessage", 403, "Forbidden: bot was blocked by the user");
    bot = await ShippedBot.start({
      config: {
        timezone: "UTC",
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
        notify: { ntfy: { url: ntfy.url, topic: "magpie-owner" } },
        delivery: { fallback: ["ntfy"] },
        cron: {
          jobs: [
            {
              name: "backup-report",
              delay: "2s",
              message: "Backup finished: 3 files",
              deliver: { channel: "telegram", chatId: BLOCKED_CHAT },
            },
          ],
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close(), ntfy?.close()]);
  });

  it("the report reaches ntfy once with its trace id, and the log names the path", async () => {
    const report = await waitFor(
      () => ntfy.messages.find((message) => message.message.includes("Backup finished: 3 files")),
      "the report on ntfy",
      20_000,
    );
    expect(report.topic).toBe("magpie-owner");
    expect(report.message).toMatch(
      /could not deliver this to telegram:503 \(.*blocked.*\)\. Trace: outbox \d+/,
    );
    await waitFor(() => bot.logText().includes("delivery-failed-over"), "the failover log line");
    expect(bot.logText()).toMatch(
      /"path":"ntfy"[^\n]*"msg":"delivery-failed-over"|"msg":"delivery-failed-over"[^\n]*"path":"ntfy"/,
    );
    expect(telegram.sentTexts().filter((text) => text.includes("Backup finished"))).toHaveLength(0);
    expect(
      ntfy.messages.filter((message) => message.message.includes("Backup finished: 3 files")),
    ).toHaveLength(1);
  });

  it("ATTACK: the owner gets one message, the report itself — not also the scheduler's 'not delivered' alert", async () => {
    // The run settles once its report's fate is recorded: then every phone message it caused has been posted.
    const db = new Database(path.join(bot.dataDir, "magpie.db"), { readonly: true, fileMustExist: true });
    try {
      const settled = () =>
        db.prepare("SELECT delivery_state, delivery FROM cron_runs WHERE delivery_state != 'pending'").get();
      const run = await waitFor(settled, "the cron run's delivery settled", 20_000);
      expect(run).toMatchObject({
        delivery_state: "failed",
        delivery: expect.stringContaining('"failedOver":"ntfy"'),
      });
    } finally {
      db.close();
    }
    expect(ntfy.messages.map((message) => message.message)).toEqual([
      expect.stringContaining("Backup finished: 3 files"),
    ]);
  });

  it("`magpie trace outbox <id>` (the id the failover message names) shows the path that delivered it", async () => {
    const report = ntfy.messages.find((message) => message.message.includes("Backup finished: 3 files"));
    const outboxId = /Trace: outbox (\d+)/.exec(report?.message ?? "")?.[1];
    expect(outboxId).toBeDefined();
    const text = await bot.cli(["trace", "outbox", outboxId!]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      new RegExp(
        `outbox ${outboxId} \\(cron\\) · failed after 1 attempt\\(s\\).*blocked by the user · delivered via ntfy \\(failover\\)`,
      ),
    );
    const json = await bot.cli(["trace", "outbox", outboxId!, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      outboxId: Number(outboxId),
      origin: "cron",
      status: "failed",
      failover: { path: "ntfy", tried: ["ntfy"] },
    });
  });
});
