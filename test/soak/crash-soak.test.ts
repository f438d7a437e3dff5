import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { BotProcess } from "./bot-process.js";
import { EchoLlm, TOKEN } from "./echo-llm.js";
import { FULL, seededRandom, sleep } from "./soak-size.js";

/**
 * Crash soak (issue 15): messages from many chats over the Telegram fake while the real CLI is SIGKILLed at
 * random points and restarted on the same database, with platform and LLM faults injected throughout.
 * Every message must be answered exactly once, or its chat told "interrupted" (at most once per crash).
 */
const SIZE = FULL
  ? { messages: 1_000, chats: 50, kills: 20, gapMs: [20, 90] as const, settleMs: 120_000 }
  : { messages: 90, chats: 10, kills: 3, gapMs: [5, 40] as const, settleMs: 30_000 };

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => {});
});

interface Sent {
  marker: string;
  chatId: number;
  /** fake.calls.length when the message was queued: notices after this point can cover it. */
  callsBefore: number;
}

describe(`crash soak (${FULL ? "full" : "short"})`, () => {
  it(
    `${SIZE.messages} messages from ${SIZE.chats} chats, ${SIZE.kills} SIGKILLs: none lost, none doubled`,
    async () => {
      const random = seededRandom();
      const telegram = await new FakeTelegram().start();
      cleanup.push(() => telegram.close());
      const llm = await new EchoLlm({ delayMs: [10, 250], faultRate: 0.08, random: random.next }).start();
      cleanup.push(() => llm.close());
      const cwd = mkdtempSync(path.join(tmpdir(), "magpie-soak-"));
      const chats = Array.from({ length: SIZE.chats }, (_, index) => 700_000 + index);
      writeFileSync(
        path.join(cwd, "magpie.yaml"),
        JSON.stringify({
          dataDir: path.join(cwd, "data"),
          http: { host: "127.0.0.1", port: 0 },
          llm: { baseUrl: llm.url, apiKey: "sk-soak", model: "echo", maxRetries: 4, timeoutMs: 10_000 },
          agent: { streaming: false, maxConcurrentTurns: 4 },
          channels: {
            telegram: {
              token: telegram.validToken,
              apiRoot: telegram.apiRoot,
              pacing: false,
              allowFrom: chats,
            },
          },
        }),
      );
      const bot = new BotProcess(cwd, "magpie.yaml");
      cleanup.push(() => bot.kill());
      await bot.start();

      const killAt = new Set<number>();
      while (killAt.size < SIZE.kills) {
        killAt.add(random.int(Math.floor(SIZE.messages * 0.05), Math.floor(SIZE.messages * 0.95)));
      }
      const faults = { telegram429: 0, telegram500: 0, drops: 0 };
      const sent: Sent[] = [];
      /**
       * fake.calls.length when each SIGKILL was sent and once the process was gone: a reply the platform took in
       * that window was never recorded as sent, so it goes out again after the restart (see `resent`).
       */
      const killWindows: Array<{ from: number; to: number }> = [];
      const started = Date.now();
      for (let index = 0; index < SIZE.messages; index++) {
        const chatId = chats[random.int(0, chats.length - 1)]!;
        const marker = `q${index}x`;
        sent.push({ marker, chatId, callsBefore: telegram.calls.length });
        telegram.pushMessage({
          chat: { id: chatId, type: "private" },
          from: { id: chatId, first_name: `User${chatId}` },
          text: `${marker} how is the disk?`,
        });
        if (random.chance(0.03)) {
          faults.telegram429++;
          telegram.failNext("sendMessage", 429, "Too Many Requests: retry after 1", 1);
        }
        if (random.chance(0.03)) {
          faults.telegram500++;
          telegram.failNext("sendMessage", 500, "Internal Server Error");
        }
        if (random.chance(0.01)) {
          faults.drops++;
          telegram.dropping = true;
          setTimeout(() => (telegram.dropping = false), random.int(100, 400));
        }
        if (killAt.has(index)) {
          // A random moment: mid-turn, mid-send or between polls.
          await sleep(random.int(0, 200));
          const from = telegram.calls.length;
          await bot.kill();
          killWindows.push({ from, to: telegram.calls.length });
          await bot.start();
        }
        await sleep(random.int(SIZE.gapMs[0], SIZE.gapMs[1]));
      }

      const replies = () =>
        telegram
          .callsOf("sendMessage")
          .filter((call) => !call.failed)
          .map((call) => ({ chatId: Number(call.body.chat_id), text: String(call.body.text) }));
      const tally = () => {
        const acks = new Map<string, Array<{ index: number; text: string }>>();
        const notices = new Map<number, number[]>();
        const calls = telegram.calls;
        for (let index = 0; index < calls.length; index++) {
          const call = calls[index]!;
          if (call.method !== "sendMessage" || call.failed) continue;
          const text = String(call.body.text);
          const chatId = Number(call.body.chat_id);
          if (text.includes("interrupted")) notices.set(chatId, [...(notices.get(chatId) ?? []), index]);
          for (const marker of text.match(TOKEN) ?? [])
            acks.set(marker, [...(acks.get(marker) ?? []), { index, text }]);
        }
        let answered = 0;
        let interrupted = 0;
        let lost = 0;
        let doubled = 0;
        let resent = 0;
        const doubledDetail: unknown[] = [];
        for (const message of sent) {
          const copies = acks.get(message.marker) ?? [];
          if (copies.length === 1) answered++;
          else if (copies.length > 1) {
            // The same reply again, first sent while the process was dying: Telegram took it, the outbox never
            // heard back, so it was sent again after the restart (Telegram has no idempotency key).
            const [first, second] = copies as [
              { index: number; text: string },
              { index: number; text: string },
            ];
            const dyingSend = killWindows.some(
              (window) => first.index >= window.from && first.index < window.to && second.index >= window.to,
            );
            if (copies.length === 2 && first.text === second.text && dyingSend) {
              resent++;
              answered++;
            } else {
              doubled++;
              doubledDetail.push({ marker: message.marker, copies, killWindows });
            }
          } else if ((notices.get(message.chatId) ?? []).some((at) => at >= message.callsBefore))
            interrupted++;
          else lost++;
        }
        const noticeCount = [...notices.values()].reduce((sum, list) => sum + list.length, 0);
        const mostNoticesInAChat = Math.max(0, ...[...notices.values()].map((list) => list.length));
        return {
          answered,
          interrupted,
          lost,
          doubled,
          resent,
          notices: noticeCount,
          mostNoticesInAChat,
          doubledDetail,
        };
      };

      const deadline = Date.now() + SIZE.settleMs;
      while (tally().lost > 0 && Date.now() < deadline) await sleep(200);
      await sleep(1_000); // anything doubled late shows up now
      const { doubledDetail, ...counts } = tally();
      const exitCode = await bot.stop();
      const report = {
        seed: random.seed,
        messages: SIZE.messages,
        chats: SIZE.chats,
        kills: bot.kills,
        ...counts,
        replies: replies().length,
        llmRequests: llm.requests,
        llmFaults: llm.faults,
        telegramFaults: faults,
        seconds: Math.round((Date.now() - started) / 1000),
      };
      console.log(`crash soak: ${JSON.stringify(report)}`);

      // The database agrees: each message's inbox row is done (answered) or interrupted (told so), none open.
      const db = new Database(path.join(cwd, "data", "magpie.db"), { readonly: true });
      const statusOf = new Map<string, string>();
      for (const row of db.prepare("SELECT status, payload FROM inbox").all() as Array<{
        status: string;
        payload: string;
      }>) {
        for (const marker of row.payload.match(TOKEN) ?? []) statusOf.set(marker, row.status);
      }
      const pendingOutbox = db.prepare("SELECT count(*) FROM outbox WHERE status != 'sent'").pluck().get();
      db.close();
      const acked = new Set(replies().flatMap((reply) => reply.text.match(TOKEN) ?? []));
      const disagreements = sent
        .map((message) => ({
          marker: message.marker,
          status: statusOf.get(message.marker),
          acked: acked.has(message.marker),
        }))
        .filter(({ status, acked }) => (acked ? status !== "done" : status !== "interrupted"));
      expect(disagreements).toEqual([]);
      expect(pendingOutbox).toBe(0);
      expect(counts.lost, `lost messages; bot problems: ${bot.problems.slice(-5).join("\n")}`).toBe(0);
      expect(counts.doubled, JSON.stringify(doubledDetail)).toBe(0);
      // At most one in-flight send per crash can be repeated (the send/record window); report how many were.
      expect(counts.resent).toBeLessThanOrEqual(bot.kills);
      expect(counts.answered + counts.interrupted).toBe(SIZE.messages);
      expect(counts.mostNoticesInAChat).toBeLessThanOrEqual(bot.kills);
      expect(exitCode).toBe(0);
      expect(bot.stderr).toBe("");
    },
    FULL ? 600_000 : 90_000,
  );
});
