import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALICE, BOT, DMARC_PASS, deliver, rawMail } from "../channels/email-mail.js";
import { type Dovecot, hasDovecot, type ImapTap, imapTap, startDovecot } from "../fakes/dovecot.js";
import { waitFor } from "../fakes/http-util.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { SmtpReceiver } from "../fakes/smtp-receiver.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 704;

/**
 * Inbound liveness through the shipped build: the Telegram fake keeps its sockets open but stops answering long
 * polls. The bot notices within `silentAfterSecs`, abandons the hung poll and polls again, `/readyz` answers 503
 * naming telegram, `magpie_channel_up{channel="telegram"}` drops to 0, and the owner gets one ntfy message; when the
 * fake answers again the owner gets one "back" note and a message is answered. A SIGTERM while the polls hang still
 * exits 0 within the 10 s DESIGN promises.
 */
describe("shipped build: a Telegram long poll that hangs", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let ntfy: NtfyFake;
  let bot: ShippedBot;

  const readyz = async () => {
    const response = await fetch(`${bot.url}/readyz`);
    return { status: response.status, body: (await response.json()) as { down: string[] } };
  };
  const channelUp = async () => {
    const text = await (await fetch(`${bot.url}/metrics`)).text();
    return /^magpie_channel_up\{channel="telegram"\} (\d)$/m.exec(text)?.[1];
  };
  const titled = (title: string) => ntfy.messages.filter((message) => message.title === title);

  beforeAll(async () => {
    [telegram, llm, ntfy] = await Promise.all([
      new FakeTelegram().start(),
      startOpenAiFake(),
      startNtfyFake(),
    ]);
    bot = await ShippedBot.start({
      config: {
        timezone: "UTC",
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        http: { metrics: { enabled: true } },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
            silentAfterSecs: 2,
          },
        },
        notify: { ntfy: { url: ntfy.url, topic: "magpie-owner" } },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close(), ntfy?.close()]);
  });

  it("is detected, reconnected, named by /readyz and /metrics, told once, and answers after recovery", async () => {
    expect(await channelUp()).toBe("1");
    telegram.stallReceives();
    const down = await waitFor(
      async () => {
        const answer = await readyz();
        return answer.status === 503 && answer.body;
      },
      "/readyz 503",
      15_000,
    );
    expect(down.down).toEqual(["telegram"]);
    expect(await channelUp()).toBe("0");
    await waitFor(() => titled("Magpie: Telegram is down").length === 1, "the ntfy alert", 15_000);
    await waitFor(() => bot.logsOf("channel-silent").length >= 2, "a second reconnect", 15_000);
    expect(titled("Magpie: Telegram is down")).toHaveLength(1);
    expect(bot.logsOf("channel-silent")[0]).toMatchObject({ channel: "telegram", limitSecs: 2 });

    telegram.resumeReceives();
    await waitFor(async () => (await readyz()).status === 200, "ready again", 15_000);
    expect(await channelUp()).toBe("1");
    await waitFor(() => titled("Magpie: Telegram is back").length === 1, "the back note", 5_000);

    llm.script(reply.text("Heard you after the stall."));
    telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text: "hello?" });
    await waitFor(() => telegram.sentTexts().includes("Heard you after the stall."), "the answer", 15_000);
    expect(titled("Magpie: Telegram is down")).toHaveLength(1);
    expect(titled("Magpie: Telegram is back")).toHaveLength(1);
  }, 90_000);

  it("stops with exit 0 within 10 s while the long poll hangs", async () => {
    telegram.stallReceives();
    await waitFor(async () => (await readyz()).status === 503, "down again", 15_000);
    const started = Date.now();
    const code = await bot.stop();
    const tookMs = Date.now() - started;
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(10_000);
  }, 40_000);
});

const MAIL_PASSWORD = "shared-secret";

/**
 * The same through the shipped build for e-mail, against a real Dovecot behind a relay that goes quiet (the IMAP
 * connection stays open and nothing comes back; a new connection gets no greeting): the bot reconnects within its
 * limit — again while the silence lasts — names it in /readyz, tells the owner once, answers a mail after
 * recovery, and a SIGTERM while the line is quiet still exits 0 within 10 s.
 */
describe.runIf(hasDovecot())("shipped build: an IMAP connection that goes quiet", () => {
  let dovecot: Dovecot;
  let tap: ImapTap;
  let smtp: SmtpReceiver;
  let llm: OpenAiFake;
  let ntfy: NtfyFake;
  let bot: ShippedBot;
  const readyz = async () => {
    const response = await fetch(`${bot.url}/readyz`);
    return { status: response.status, body: (await response.json()) as { down: string[] } };
  };
  const titled = (title: string) => ntfy.messages.filter((message) => message.title === title);

  beforeAll(async () => {
    dovecot = await startDovecot({ bot: MAIL_PASSWORD });
    [tap, smtp, llm, ntfy] = await Promise.all([
      imapTap(dovecot),
      new SmtpReceiver(BOT, MAIL_PASSWORD).start(),
      startOpenAiFake(),
      startNtfyFake(),
    ]);
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        channels: {
          email: {
            address: BOT,
            imap: { host: "127.0.0.1", port: tap.port, secure: false, user: "bot" },
            smtp: { host: "127.0.0.1", port: smtp.port, secure: false, user: BOT },
            authservId: "mx.example.org",
            dmPolicy: "allowlist",
            allowFrom: [ALICE],
            pacing: false,
            silentAfterSecs: 2,
          },
        },
        notify: { ntfy: { url: ntfy.url, topic: "magpie-owner" } },
      },
      env: { EMAIL_PASSWORD: MAIL_PASSWORD },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([tap?.close(), smtp?.close(), llm?.close(), ntfy?.close()]);
    await dovecot?.stop();
  });

  it("is reconnected within its limit while quiet, named by /readyz, told once, and answers after recovery", async () => {
    const before = tap.connections;
    tap.stall();
    const down = await waitFor(
      async () => {
        const answer = await readyz();
        return answer.status === 503 && answer.body;
      },
      "/readyz 503",
      15_000,
    );
    expect(down.down).toEqual(["email"]);
    await waitFor(() => titled("Magpie: E-mail is down").length === 1, "the ntfy alert", 15_000);
    // The first reconnect, and one more while the line stays quiet (an attempt held at the greeting is dropped).
    await waitFor(() => tap.connections >= before + 2, "a second reconnect", 15_000);
    expect(titled("Magpie: E-mail is down")).toHaveLength(1);

    tap.resume();
    await waitFor(async () => (await readyz()).status === 200, "ready again", 30_000);
    await waitFor(() => titled("Magpie: E-mail is back").length === 1, "the back note", 5_000);
    llm.script(reply.text("Mail heard after the quiet."));
    await deliver(
      dovecot,
      rawMail({ subject: "Back?", body: "still there?", headers: [DMARC_PASS] }),
      "bot",
      MAIL_PASSWORD,
    );
    const answer = await waitFor(() => smtp.mails[0], "the answer by mail", 30_000);
    expect(answer.parsed.text).toContain("Mail heard after the quiet.");
    expect(titled("Magpie: E-mail is down")).toHaveLength(1);
    expect(titled("Magpie: E-mail is back")).toHaveLength(1);
  }, 90_000);

  it("stops with exit 0 within 10 s while the IMAP line is quiet", async () => {
    tap.stall();
    await waitFor(async () => (await readyz()).status === 503, "down again", 15_000);
    const started = Date.now();
    const code = await bot.stop();
    const tookMs = Date.now() - started;
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(10_000);
  }, 40_000);
});
