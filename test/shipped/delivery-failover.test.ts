import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 503;
// The owner's own chat (a report may go only to a chat Magpie may post to), where the owner blocked the bot.
const BLOCKED_CHAT = OWNER;
const DASHBOARD_TOKEN = "shipped-failover-dashboard-0123456789";
const METRICS_TOKEN = "shipped-failover-metrics-0123456789";
const HOOK_SECRET = "shipped-failover-webhook-0123456789";

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
        http: { dashboard: { enabled: true, token: DASHBOARD_TOKEN }, metrics: { enabled: true } },
        // A trigger that delivers to the same blocked chat and to ntfy (the last test).
        triggers: {
          door: {
            on: { webhook: { secret: HOOK_SECRET } },
            do: { message: "The shed door opened" },
            deliver: { channel: "telegram", chat_id: BLOCKED_CHAT, ntfy: true },
          },
        },
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
      env: { MAGPIE_METRICS_TOKEN: METRICS_TOKEN },
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
    // The dashboard's page for the same id says the same.
    const page = await fetch(`${bot.url}/ui/trace/outbox/${outboxId}`, {
      headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` },
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('data-failover-path="ntfy">delivered via ntfy (failover)</b>');
    const json = await bot.cli(["trace", "outbox", outboxId!, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      outboxId: Number(outboxId),
      origin: "cron",
      status: "failed",
      failover: { path: "ntfy", tried: ["ntfy"] },
    });
  });

  it("ATTACK: a trigger delivering to the blocked chat and to ntfy: ntfy once; trace says it was already there; /metrics counts no failover for it", async () => {
    telegram.failNext("sendMessage", 403, "Forbidden: bot was blocked by the user");
    const body = "{}";
    const timestamp = Math.floor(Date.now() / 1000);
    const response = await fetch(`${bot.url}/hooks/door`, {
      method: "POST",
      headers: {
        "x-magpie-timestamp": String(timestamp),
        "x-magpie-signature": signWebhook(HOOK_SECRET, timestamp, body),
      },
      body,
    });
    expect(response.status).toBe(202);
    const decided = await waitFor(
      () => bot.logsOf("delivery-failover-already-delivered")[0],
      "the failover's decision on the refused chat copy",
      20_000,
    );
    expect(decided).toMatchObject({ path: "ntfy", from: `telegram:${BLOCKED_CHAT}` });
    expect(bot.logsOf("delivery-failed-over")).toHaveLength(1); // the cron report's, only
    expect(ntfy.messages.filter((message) => message.message.includes("The shed door opened"))).toHaveLength(
      1,
    );
    const trace = await bot.cli(["trace", "outbox", String(decided.outboxId)]);
    expect(trace.code).toBe(0);
    expect(trace.stdout).toContain("already delivered via ntfy by its own delivery (failover sent nothing)");
    expect(trace.stdout).not.toContain("(failover)");
    const page = await fetch(`${bot.url}/ui/trace/outbox/${String(decided.outboxId)}`, {
      headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` },
    });
    expect(await page.text()).toContain(
      'data-failover-path="ntfy">already delivered via ntfy by its own delivery (failover sent nothing)</b>',
    );
    const metrics = await fetch(`${bot.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(metrics.status).toBe(200);
    // The cron report's failover sent a message; the trigger's copy sent nothing: one failover, not two.
    expect(await metrics.text()).toMatch(/^magpie_delivery_failovers_total\{path="ntfy"\} 1$/m);
  }, 60_000);
});

const DM_OWNER = 517;

/**
 * Delivery failover of a reply in the owner's direct chat, and of an owner alert, through the shipped build: the
 * owner blocked the bot on Telegram, so the reply (and later an alert's DM copy) is refused for good. Each
 * undeliverable item reaches the owner's phone once — the item itself with its trace id — never also as the
 * undeliverable feature's alert, and an alert that is itself undeliverable does not loop.
 */
describe("shipped build: an owner's undeliverable DM reply or alert reaches the phone once", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let ntfy: NtfyFake;
  let bot: ShippedBot;
  const config = (fallback: string[]) => ({
    timezone: "UTC",
    llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
    agent: { streaming: false, progressNoticeSecs: 0 },
    channels: {
      telegram: {
        token: telegram.validToken,
        apiRoot: telegram.apiRoot,
        pacing: false,
        allowFrom: [DM_OWNER],
      },
    },
    notify: { ntfy: { url: ntfy.url, topic: "magpie-owner" } },
    delivery: { fallback },
  });
  const withText = (text: string) => ntfy.messages.filter((message) => message.message.includes(text));

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    ntfy = await startNtfyFake();
    bot = await ShippedBot.start({ config: config(["ntfy"]) });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close(), ntfy?.close()]);
  });

  it("ATTACK: a refused reply in the owner's DM → one phone message (the reply, with its trace id), not also the 'reply undeliverable' alert", async () => {
    telegram.failNext("sendMessage", 403, "Forbidden: bot was blocked by the user");
    llm.script(reply.text("Disk usage is 41 percent."));
    telegram.pushMessage({ chat: { id: DM_OWNER, type: "private" }, from: { id: DM_OWNER }, text: "disk?" });
    const forwarded = await waitFor(
      () => withText("Disk usage is 41 percent.")[0],
      "the reply on ntfy",
      20_000,
    );
    expect(forwarded.message).toMatch(
      /could not deliver this to telegram:517 \(.*blocked.*\)\. Trace: magpie trace \d+$/,
    );
    // The undeliverable feature has made its decision (alert or not) once the message's outcome is written and
    // the reply failed over; a later reply that gets through then proves everything before it was posted.
    await waitFor(() => bot.logsOf("delivery-failed-over").length === 1, "the failover log line");
    llm.script(reply.text("Unblocked, thanks."));
    telegram.pushMessage({ chat: { id: DM_OWNER, type: "private" }, from: { id: DM_OWNER }, text: "again" });
    await waitFor(
      () => telegram.sentTexts().includes("Unblocked, thanks."),
      "the next reply delivered",
      20_000,
    );
    expect(ntfy.messages.map((message) => message.title)).toEqual(["Magpie: undeliverable to telegram:517"]);
    expect(withText("can't deliver replies")).toHaveLength(0);

    const inboxId = /Trace: magpie trace (\d+)/.exec(forwarded.message)?.[1];
    const trace = await bot.cli(["trace", inboxId!]);
    expect(trace.code).toBe(0);
    expect(trace.stdout).toMatch(/undeliverable/);
    expect(trace.stdout).toMatch(/delivered via ntfy \(failover\)/);
  }, 60_000);

  it("ATTACK: an owner alert whose DM copy is refused → one phone message, no failover copy, no loop", async () => {
    const before = ntfy.messages.length;
    const alertText = "config file was changed but it is invalid";
    const alertAttempts = () =>
      telegram.callsOf("sendMessage").filter((call) => String(call.body.text).includes(alertText));
    const decisions = () =>
      bot.logsOf("delivery-failed-over").length + bot.logsOf("delivery-failover-not-needed").length;
    const decided = decisions();
    // The owner blocks the bot again; then the config file is saved broken: the reload alert goes to the phone
    // and to the owner's DM, which refuses it.
    telegram.failNext("sendMessage", 403, "Forbidden: bot was blocked by the user");
    const good = readFileSync(bot.configFile, "utf8");
    writeFileSync(bot.configFile, "channels: [this is not: a valid config\n");
    await waitFor(() => withText(alertText).length >= 1, "the alert on ntfy", 20_000);
    await waitFor(() => alertAttempts().length >= 1, "the alert's DM copy tried", 20_000);
    await waitFor(() => decisions() > decided, "the failover's decision on the refused DM copy", 20_000);
    // A reply that gets through afterwards: every post caused before it has landed.
    writeFileSync(bot.configFile, good);
    llm.script(reply.text("Config fixed."));
    telegram.pushMessage({ chat: { id: DM_OWNER, type: "private" }, from: { id: DM_OWNER }, text: "ok?" });
    await waitFor(() => telegram.sentTexts().includes("Config fixed."), "the next reply delivered", 20_000);
    expect(withText(alertText)).toHaveLength(1);
    expect(ntfy.messages.slice(before).map((message) => message.title)).toEqual([
      "Magpie: config not reloaded",
    ]);
    // The refused copy was tried once and nothing was said about it (no alert about the alert).
    expect(alertAttempts()).toHaveLength(1);
    expect(alertAttempts()[0]?.failed).toBe(true);
  }, 60_000);
});
