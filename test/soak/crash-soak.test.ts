import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { DISCORD_USER, FakeDiscord } from "../fakes/discord.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { BotProcess } from "./bot-process.js";
import { EchoLlm, TOKEN } from "./echo-llm.js";
import {
  type Delivery,
  discordPlatform,
  SLACK_SOAK_USER,
  type SoakPlatform,
  slackPlatform,
  telegramPlatform,
} from "./soak-platforms.js";
import { FULL, seededRandom, sleep } from "./soak-size.js";

/**
 * Crash soak (issue 15): messages from many chats over the Telegram fake (and some over Slack and Discord) while
 * the real CLI is SIGKILLed at random points and restarted on the same database, with platform and LLM faults
 * injected throughout. Every message Magpie took must be answered exactly once, or its chat told "interrupted"
 * (at most once per crash); the inbox must agree.
 */
const SIZE = FULL
  ? { messages: 1_000, chats: 50, kills: 20, gapMs: [20, 90] as const, settleMs: 120_000 }
  : { messages: 90, chats: 10, kills: 3, gapMs: [5, 40] as const, settleMs: 30_000 };
/** Share of messages sent over Slack and over Discord (the rest over Telegram). */
const OTHER_CHANNELS_SHARE = 0.05;

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => {});
});

interface Sent {
  platform: SoakPlatform;
  marker: string;
  /** Where replies and notices for it go. */
  replyChat: string;
  /** The platform's call count when it was sent: notices after this point can cover it. */
  callsBefore: number;
  /** Whether Magpie took it (see SoakPlatform.send). */
  taken: () => boolean;
}

describe(`crash soak (${FULL ? "full" : "short"})`, () => {
  it(
    `${SIZE.messages} messages from ${SIZE.chats} chats and Slack and Discord, ${SIZE.kills} SIGKILLs: none lost, none doubled`,
    async () => {
      const random = seededRandom();
      const [telegram, slack, discord] = await Promise.all([
        new FakeTelegram().start(),
        new FakeSlack().start(),
        new FakeDiscord().start(),
      ]);
      cleanup.push(
        () => telegram.close(),
        () => slack.close(),
        () => discord.close(),
      );
      const llm = await new EchoLlm({ delayMs: [10, 250], faultRate: 0.08, random: random.next }).start();
      cleanup.push(() => llm.close());
      const cwd = mkdtempSync(path.join(tmpdir(), "magpie-soak-"));
      const databaseFile = path.join(cwd, "data", "magpie.db");
      const chats = Array.from({ length: SIZE.chats }, (_, index) => String(700_000 + index));
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
            slack: {
              botToken: slack.botToken,
              appToken: slack.appToken,
              apiUrl: slack.apiUrl,
              pacing: false,
              allowFrom: [SLACK_SOAK_USER],
            },
            discord: {
              token: discord.validToken,
              apiBase: discord.apiBase,
              pacing: false,
              allowFrom: [DISCORD_USER.id],
            },
          },
        }),
      );
      /** Markers of the Discord messages in the inbox (what Magpie took from the gateway). */
      const takenByDiscord = () => {
        const db = new Database(databaseFile, { readonly: true, fileMustExist: true });
        try {
          const payloads = db
            .prepare("SELECT payload FROM inbox WHERE channel = 'discord'")
            .pluck()
            .all() as string[];
          return new Set(payloads.flatMap((payload) => payload.match(TOKEN) ?? []).map((marker) => marker));
        } finally {
          db.close();
        }
      };
      /** How many outbox rows (answers) carry a message's marker. */
      const replyRowsOf = (marker: string): number => {
        const db = new Database(databaseFile, { readonly: true, fileMustExist: true });
        try {
          const payloads = db.prepare("SELECT payload FROM outbox").pluck().all() as string[];
          return payloads.filter((payload) => payload.includes(marker)).length;
        } finally {
          db.close();
        }
      };
      const platforms = {
        telegram: telegramPlatform(telegram),
        slack: slackPlatform(slack),
        discord: discordPlatform(discord, () => {
          const markers = takenByDiscord();
          return new Set([...markers].map((marker) => `${marker} how is the disk?`));
        }),
      };
      const replyChatOf = { slack: "D0ALICE", discord: "400000000000000001" } as const;
      const bot = new BotProcess(cwd, "magpie.yaml");
      cleanup.push(() => bot.kill());
      await bot.start();

      const killAt = new Set<number>();
      while (killAt.size < SIZE.kills) {
        killAt.add(random.int(Math.floor(SIZE.messages * 0.05), Math.floor(SIZE.messages * 0.95)));
      }
      const faults: Record<string, number> = {};
      const sent: Sent[] = [];
      /** Each platform's call count when a SIGKILL was sent and once the process was gone. */
      const killWindows: Array<Map<string, { from: number; to: number }>> = [];
      const started = Date.now();
      for (let index = 0; index < SIZE.messages; index++) {
        const roll = random.next();
        const platform =
          roll < OTHER_CHANNELS_SHARE
            ? platforms.slack
            : roll < 2 * OTHER_CHANNELS_SHARE
              ? platforms.discord
              : platforms.telegram;
        const chat = platform.name === "telegram" ? chats[random.int(0, chats.length - 1)]! : "";
        const marker = `q${index}x`;
        const callsBefore = platform.callCount();
        const taken = platform.send(chat, `${marker} how is the disk?`);
        sent.push({
          platform,
          marker,
          replyChat: platform.name === "telegram" ? chat : replyChatOf[platform.name],
          callsBefore,
          taken,
        });
        for (const target of Object.values(platforms)) {
          if (random.chance(target.name === "telegram" ? 0.06 : 0.02)) {
            const kind = `${target.name}:${target.fault(random)}`;
            faults[kind] = (faults[kind] ?? 0) + 1;
          }
        }
        if (killAt.has(index)) {
          // A random moment: mid-turn, mid-send or between polls.
          await sleep(random.int(0, 200));
          const before = new Map(Object.values(platforms).map((target) => [target.name, target.callCount()]));
          await bot.kill();
          // A request the dying process had already written is still read and answered by the fake after the exit.
          await sleep(150);
          killWindows.push(
            new Map(
              Object.values(platforms).map((target) => [
                target.name,
                { from: before.get(target.name)!, to: target.callCount() },
              ]),
            ),
          );
          await bot.start();
        }
        await sleep(random.int(SIZE.gapMs[0], SIZE.gapMs[1]));
      }

      const tally = () => {
        const copiesOf = new Map<string, Array<Delivery & { platform: string }>>();
        const notices = new Map<string, number[]>();
        const noticeKinds: Record<string, number> = {};
        for (const platform of Object.values(platforms)) {
          for (const delivery of platform.deliveries()) {
            if (delivery.text.includes("interrupted")) {
              const kind = `${platform.name}: ${delivery.text.slice(0, 60)}`;
              noticeKinds[kind] = (noticeKinds[kind] ?? 0) + 1;
              const key = `${platform.name}:${delivery.chat}`;
              notices.set(key, [...(notices.get(key) ?? []), delivery.index]);
            }
            for (const marker of delivery.text.match(TOKEN) ?? []) {
              copiesOf.set(marker, [
                ...(copiesOf.get(marker) ?? []),
                { ...delivery, platform: platform.name },
              ]);
            }
          }
        }
        const counts = { answered: 0, interrupted: 0, lost: 0, notTaken: 0, doubled: 0, resent: 0 };
        const byChannel: Record<string, number> = {};
        const doubledDetail: unknown[] = [];
        for (const message of sent) {
          byChannel[message.platform.name] = (byChannel[message.platform.name] ?? 0) + 1;
          const copies = copiesOf.get(message.marker) ?? [];
          if (copies.length === 1) counts.answered++;
          else if (copies.length > 1) {
            // The same reply again, first accepted by the platform while the process was dying: the outbox never
            // heard back, so it was sent again after the restart (Telegram and Slack take no idempotency key).
            const first = copies[0]!;
            const second = copies[1]!;
            // Sent once by the dying process (the platform took it before the kill, or while it was being killed)
            // and again after the restart: a kill lies between the copies, and either the first copy came in the
            // kill window or the database holds a single reply for the message (one answer, delivered twice — on a
            // loaded machine the dying process can lag behind the platform's acceptance by more than the window).
            const dyingSend = killWindows.some((windows) => {
              const window = windows.get(message.platform.name)!;
              if (!(first.index < window.to && second.index >= window.to)) return false;
              return first.index >= window.from || replyRowsOf(message.marker) === 1;
            });
            if (copies.length === 2 && first.text === second.text && dyingSend) {
              counts.resent++;
              counts.answered++;
            } else {
              counts.doubled++;
              doubledDetail.push({ marker: message.marker, copies });
            }
          } else if (
            (notices.get(`${message.platform.name}:${message.replyChat}`) ?? []).some(
              (at) => at >= message.callsBefore,
            )
          ) {
            counts.interrupted++;
          } else if (!message.taken()) counts.notTaken++;
          else counts.lost++;
        }
        const noticeLists = [...notices.values()];
        return {
          ...counts,
          byChannel,
          notices: noticeLists.reduce((sum, list) => sum + list.length, 0),
          mostNoticesInAChat: Math.max(0, ...noticeLists.map((list) => list.length)),
          noticeKinds,
          doubledDetail,
        };
      };

      const deadline = Date.now() + SIZE.settleMs;
      while (tally().lost > 0 && Date.now() < deadline) await sleep(250);
      await sleep(1_000); // anything doubled late shows up now
      const { doubledDetail, ...counts } = tally();
      const exitCode = await bot.stop();
      const report = {
        seed: random.seed,
        messages: SIZE.messages,
        chats: SIZE.chats,
        kills: bot.kills,
        ...counts,
        llmRequests: llm.requests,
        llmFaults: llm.faults,
        channelFaults: faults,
        seconds: Math.round((Date.now() - started) / 1000),
      };
      console.log(`crash soak: ${JSON.stringify(report)}`);

      // The database agrees: each taken message's inbox row is done (answered) or interrupted (told so).
      const db = new Database(databaseFile, { readonly: true });
      const statusOf = new Map<string, string>();
      for (const row of db.prepare("SELECT status, payload FROM inbox").all() as Array<{
        status: string;
        payload: string;
      }>) {
        for (const marker of row.payload.match(TOKEN) ?? []) statusOf.set(marker, row.status);
      }
      const unsentReplies = db.prepare("SELECT count(*) FROM outbox WHERE status != 'sent'").pluck().get();
      db.close();
      const acked = new Set(
        Object.values(platforms).flatMap((platform) =>
          platform.deliveries().flatMap((delivery) => delivery.text.match(TOKEN) ?? []),
        ),
      );
      const disagreements = sent
        .filter((message) => statusOf.has(message.marker))
        .map((message) => ({
          marker: message.marker,
          status: statusOf.get(message.marker),
          acked: acked.has(message.marker),
        }))
        .filter(({ status, acked }) => (acked ? status !== "done" : status !== "interrupted"));
      expect(disagreements).toEqual([]);
      expect(unsentReplies).toBe(0);
      expect(counts.lost, `lost messages; bot problems: ${bot.problems.slice(-5).join("\n")}`).toBe(0);
      expect(counts.doubled, JSON.stringify(doubledDetail)).toBe(0);
      // A send in flight at a kill can repeat (the send/record window): at most a few per crash.
      expect(counts.resent).toBeLessThanOrEqual(bot.kills * 2);
      expect(counts.answered + counts.interrupted + counts.notTaken).toBe(SIZE.messages);
      expect(counts.notTaken).toBeLessThanOrEqual(bot.kills * 3);
      expect(counts.mostNoticesInAChat).toBeLessThanOrEqual(bot.kills);
      expect(exitCode).toBe(0);
      expect(bot.stderr).toBe("");
    },
    FULL ? 600_000 : 90_000,
  );
});
