import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "../shipped/shipped-bot.js";
import { EchoLlm, TOKEN } from "./echo-llm.js";
import { FULL, seededRandom, sleep } from "./soak-size.js";

/**
 * Outage soak (issue 35 → Waiting out an outage), through the built CLI with the Telegram fake and the echo LLM:
 * - the LLM refuses connections under traffic from several chats, then comes back: every message is answered
 *   exactly once after it returns, in order per chat, and each chat got exactly one "unreachable" notice;
 * - the Telegram Bot API is down (every socket dropped): every reply — one queued before the outage began among
 *   them — is delivered exactly once after it ends, in order per chat.
 * `npm test` runs 15 s outages; `npm run soak` (MAGPIE_SOAK=full) the 5 minutes (LLM) and 10 (Telegram).
 */
const SIZE = FULL
  ? { llmDownMs: 5 * 60_000, telegramDownMs: 10 * 60_000, chats: 10, perChat: 6, settleMs: 120_000 }
  : { llmDownMs: 15_000, telegramDownMs: 15_000, chats: 3, perChat: 3, settleMs: 30_000 };

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => {});
});

const NOTICE = /^The model is unreachable — I'll answer when it's back/;

async function until(check: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await sleep(50);
  }
}

interface Delivered {
  chat: string;
  text: string;
}

function delivered(telegram: FakeTelegram): Delivered[] {
  return telegram
    .callsOf("sendMessage")
    .filter((call) => !call.failed)
    .map((call) => ({ chat: String(call.body.chat_id), text: String(call.body.text) }));
}

/** Each marker sent must be in exactly one delivered reply of its chat, and a chat's markers come back in order. */
function checkAnswers(sent: Map<string, string[]>, replies: Delivered[]): void {
  for (const [chat, markers] of sent) {
    const answered = replies
      .filter((reply) => reply.chat === chat)
      .flatMap((reply) => reply.text.match(TOKEN) ?? []);
    expect(answered, `chat ${chat}`).toEqual(markers);
  }
}

function openDb(bot: ShippedBot): Database.Database {
  return new Database(path.join(bot.dataDir, "magpie.db"), { readonly: true, fileMustExist: true });
}

async function startBot(
  llm: EchoLlm,
  telegram: FakeTelegram,
  chats: string[],
  agent: object,
): Promise<ShippedBot> {
  const bot = await ShippedBot.start({
    config: {
      llm: { baseUrl: llm.url, apiKey: "sk-soak", model: "echo", timeoutMs: 10_000 },
      agent: { streaming: false, progressNoticeSecs: 0, ...agent },
      channels: {
        telegram: { token: telegram.validToken, apiRoot: telegram.apiRoot, pacing: false, allowFrom: chats },
      },
    },
  });
  cleanup.push(() => bot.dispose());
  return bot;
}

function say(telegram: FakeTelegram, chat: string, text: string): void {
  telegram.pushMessage({
    chat: { id: Number(chat), type: "private" },
    from: { id: Number(chat), first_name: `User${chat}` },
    text,
  });
}

describe(`outage soak (${FULL ? "full" : "short"})`, () => {
  it(
    `LLM refusing connections for ${SIZE.llmDownMs / 1000} s under traffic from ${SIZE.chats} chats: all answered once, in order, one notice per chat`,
    async () => {
      const random = seededRandom();
      const telegram = await new FakeTelegram().start();
      cleanup.push(() => telegram.close());
      const llm = await new EchoLlm({ delayMs: [5, 40], faultRate: 0, random: random.next }).start();
      const port = Number(new URL(llm.url).port);
      cleanup.push(() => llm.close());
      const chats = Array.from({ length: SIZE.chats }, (_, index) => String(810_000 + index));
      // Short: tried every 2 s at most (a 60th of the limit); full: the default limit and back-off.
      const bot = await startBot(llm, telegram, chats, FULL ? {} : { retryOutageForSecs: 120 });
      let counter = 0;
      const sent = new Map<string, string[]>(chats.map((chat) => [chat, []]));
      const send = (chat: string) => {
        const marker = `q${++counter}x`;
        sent.get(chat)!.push(marker);
        say(telegram, chat, `${marker} how is the disk?`);
      };
      // Up: one answer in the first chat.
      send(chats[0]!);
      await until(
        () => delivered(telegram).length === 1,
        15_000,
        () => bot.logText(),
      );

      await llm.close();
      const downAt = Date.now();
      // Traffic over the first two thirds of the outage, every chat several times.
      const gapMs = (SIZE.llmDownMs * 0.66) / (SIZE.chats * SIZE.perChat);
      for (let round = 0; round < SIZE.perChat; round++) {
        for (const chat of chats) {
          send(chat);
          await sleep(gapMs * (0.5 + random.next()));
        }
      }
      await sleep(Math.max(0, downAt + SIZE.llmDownMs - Date.now()));
      // Nothing answered while it was down (only the notices went out).
      expect(delivered(telegram).filter((reply) => !NOTICE.test(reply.text))).toHaveLength(1);
      await llm.start(port);
      const cameBack = Date.now();

      const allMarkers = [...sent.values()].flat();
      const answeredMarkers = () =>
        new Set(delivered(telegram).flatMap((reply) => reply.text.match(TOKEN) ?? [])).size;
      await until(
        () => answeredMarkers() === allMarkers.length,
        SIZE.settleMs,
        () => `${answeredMarkers()} of ${allMarkers.length} answered\n${bot.logText()}`,
      );
      const recoveredInMs = Date.now() - cameBack;
      const replies = delivered(telegram);
      checkAnswers(sent, replies);
      for (const chat of chats) {
        const notices = replies.filter((reply) => reply.chat === chat && NOTICE.test(reply.text));
        expect(notices, `notices in chat ${chat}`).toHaveLength(1);
      }
      expect(replies.filter((reply) => /interrupted|gave up|failed/i.test(reply.text))).toEqual([]);

      const db = openDb(bot);
      try {
        const outcomes = db.prepare("SELECT outcome, outcome_cause FROM inbox ORDER BY id").all() as Array<{
          outcome: string | null;
          outcome_cause: string | null;
        }>;
        expect(outcomes.every((row) => row.outcome === "answered")).toBe(true);
        // The first parked turn of each chat says how long it waited.
        const waited = outcomes.filter((row) => row.outcome_cause?.startsWith("after waiting"));
        expect(waited.length).toBeGreaterThanOrEqual(chats.length);
      } finally {
        db.close();
      }
      console.info(
        `[outage soak] LLM down ${SIZE.llmDownMs / 1000} s, ${allMarkers.length} messages from ${chats.length} chats: ` +
          `all answered once, in order, ${chats.length} notices; last answer ${recoveredInMs} ms after it came back (seed ${random.seed})`,
      );
    },
    SIZE.llmDownMs + SIZE.settleMs + 60_000,
  );

  it(
    `Telegram Bot API down ${SIZE.telegramDownMs / 1000} s: every reply, one queued before the outage, delivered once, in order`,
    async () => {
      const random = seededRandom();
      const telegram = await new FakeTelegram().start();
      cleanup.push(() => telegram.close());
      const llm = await new EchoLlm({ delayMs: [300, 900], faultRate: 0, random: random.next }).start();
      cleanup.push(() => llm.close());
      const chats = Array.from({ length: SIZE.chats }, (_, index) => String(820_000 + index));
      const bot = await startBot(llm, telegram, chats, {});
      let counter = 0;
      const sent = new Map<string, string[]>(chats.map((chat) => [chat, []]));
      const send = (chat: string) => {
        const marker = `q${++counter}x`;
        sent.get(chat)!.push(marker);
        say(telegram, chat, `${marker} status?`);
      };
      send(chats[0]!);
      await until(
        () => delivered(telegram).length === 1,
        15_000,
        () => bot.logText(),
      );

      // The next reply is refused once (a 500): it backs off, and the outage begins while it waits.
      telegram.failNext("sendMessage", 500, "Internal Server Error");
      for (const chat of chats) send(chat);
      await until(
        () => telegram.callsOf("sendMessage").some((call) => call.failed),
        15_000,
        () => bot.logText(),
      );
      const olderReply = telegram.callsOf("sendMessage").find((call) => call.failed)!;
      const olderMarkers = String(olderReply.body.text).match(TOKEN) ?? [];
      telegram.dropping = true;
      const deliveredBefore = delivered(telegram).length;
      // More messages while it is down: Telegram keeps them until Magpie can poll again.
      const gapMs = (SIZE.telegramDownMs * 0.5) / (SIZE.chats * SIZE.perChat);
      for (let round = 1; round < SIZE.perChat; round++) {
        for (const chat of chats) {
          send(chat);
          await sleep(gapMs * (0.5 + random.next()));
        }
      }
      await sleep(Math.max(0, SIZE.telegramDownMs - SIZE.telegramDownMs * 0.5));
      expect(delivered(telegram)).toHaveLength(deliveredBefore);
      telegram.dropping = false;
      const cameBack = Date.now();

      const allMarkers = [...sent.values()].flat();
      const answeredMarkers = () =>
        new Set(delivered(telegram).flatMap((reply) => reply.text.match(TOKEN) ?? [])).size;
      await until(
        () => answeredMarkers() === allMarkers.length,
        SIZE.settleMs,
        () => `${answeredMarkers()} of ${allMarkers.length} delivered\n${bot.logText()}`,
      );
      const recoveredInMs = Date.now() - cameBack;
      const replies = delivered(telegram);
      checkAnswers(sent, replies);
      // The reply queued before the outage went out after it, once.
      expect(olderMarkers.length).toBeGreaterThan(0);
      const olderDeliveries = replies.filter((reply) =>
        olderMarkers.every((marker) => reply.text.includes(marker)),
      );
      expect(olderDeliveries).toHaveLength(1);
      expect(replies.indexOf(olderDeliveries[0]!)).toBeGreaterThanOrEqual(deliveredBefore);

      const db = openDb(bot);
      try {
        // The fake has every reply; the bot records the last one's status when Telegram's answer reaches it.
        const openRows = db.prepare("SELECT COUNT(*) FROM outbox WHERE status != 'sent'").pluck();
        await until(
          () => openRows.get() === 0,
          10_000,
          () => `${String(openRows.get())} outbox rows not sent\n${bot.logText()}`,
        );
        const outcomes = db.prepare("SELECT DISTINCT outcome FROM inbox").pluck().all();
        expect(outcomes).toEqual(["answered"]);
      } finally {
        db.close();
      }
      console.info(
        `[outage soak] Telegram down ${SIZE.telegramDownMs / 1000} s, ${allMarkers.length} messages from ${chats.length} chats: ` +
          `every reply delivered once, in order; last ${recoveredInMs} ms after it came back (seed ${random.seed})`,
      );
    },
    SIZE.telegramDownMs + SIZE.settleMs + 60_000,
  );
});
