import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { BotProcess } from "./bot-process.js";
import { TOKEN } from "./echo-llm.js";
import { approveTelegramPrompts, type Delivery, telegramPlatform } from "./soak-platforms.js";
import { FULL, seededRandom, sleep } from "./soak-size.js";
import { LINES_FILE, ToolLlm } from "./tool-llm.js";

/**
 * Crash soak with tool-using turns (issue 35 → Durable turns): every message makes the model append a unique line
 * to a file through `file_append` (a side effect) and then answer, while the real CLI is SIGKILLed at random
 * points and restarted on the same database. Cut-off turns resume from their step journal: no message lost, no
 * reply doubled, no line written twice; "interrupted" only where resuming was impossible, naming what was done.
 */
const SIZE = FULL
  ? { messages: 1_000, chats: 50, kills: 20, gapMs: [20, 90] as const, settleMs: 180_000 }
  : { messages: 60, chats: 8, kills: 3, gapMs: [5, 40] as const, settleMs: 30_000 };

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => {});
});

describe(`crash soak with side-effecting tool calls (${FULL ? "full" : "short"})`, () => {
  it(
    `${SIZE.messages} tool-using messages, ${SIZE.kills} SIGKILLs: none lost, no reply or side effect doubled`,
    async () => {
      const random = seededRandom();
      const telegram = await new FakeTelegram().start();
      cleanup.push(() => telegram.close());
      const llm = await new ToolLlm({ delayMs: [10, 150], faultRate: 0.05, random: random.next }).start();
      cleanup.push(() => llm.close());
      const cwd = mkdtempSync(path.join(tmpdir(), "magpie-tool-soak-"));
      const dataDir = path.join(cwd, "data");
      const workspace = path.join(cwd, "workspace");
      const chats = Array.from({ length: SIZE.chats }, (_, index) => String(710_000 + index));
      writeFileSync(
        path.join(cwd, "magpie.yaml"),
        JSON.stringify({
          dataDir,
          workspace,
          http: { host: "127.0.0.1", port: 0 },
          llm: { baseUrl: llm.url, apiKey: "sk-soak", model: "tooly", maxRetries: 4, timeoutMs: 10_000 },
          agent: { streaming: false, maxConcurrentTurns: 4, progressNoticeSecs: 0 },
          agents: { main: { toolSet: ["file_append", "file_grep"] } },
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
      const platform = telegramPlatform(telegram);
      const owner = approveTelegramPrompts(telegram);
      cleanup.push(async () => owner.stop());
      const bot = new BotProcess(cwd, "magpie.yaml");
      cleanup.push(() => bot.kill());
      // Start-up gets 60 s: on a shared 2-core box under load a start took over 15 s (what is measured here is
      // what a restart does with the turns it finds, not how fast it starts).
      const START_MS = 60_000;
      await bot.start(START_MS);

      const killAt = new Set<number>();
      while (killAt.size < SIZE.kills) {
        killAt.add(random.int(Math.floor(SIZE.messages * 0.05), Math.floor(SIZE.messages * 0.95)));
      }
      const sent: Array<{ marker: string; chat: string; callsBefore: number }> = [];
      const killWindows: Array<{ from: number; to: number }> = [];
      const started = Date.now();
      for (let index = 0; index < SIZE.messages; index++) {
        const chat = chats[random.int(0, chats.length - 1)]!;
        const marker = `q${index}x`;
        sent.push({ marker, chat, callsBefore: platform.callCount() });
        platform.send(chat, `${marker} note this down`);
        if (random.chance(0.04)) platform.fault(random);
        if (killAt.has(index)) {
          // A random moment: mid-LLM call, mid-tool call, between a tool's result and the next call, mid-send.
          await sleep(random.int(0, 250));
          const from = platform.callCount();
          await bot.kill();
          await sleep(150);
          killWindows.push({ from, to: platform.callCount() });
          await bot.start(START_MS);
        }
        await sleep(random.int(SIZE.gapMs[0], SIZE.gapMs[1]));
      }

      const linesOf = () => {
        const file = path.join(workspace, LINES_FILE);
        const counts = new Map<string, number>();
        if (!existsSync(file)) return counts;
        for (const line of readFileSync(file, "utf8").split("\n").filter(Boolean))
          counts.set(line, (counts.get(line) ?? 0) + 1);
        return counts;
      };
      /** Outbox rows holding each marker's reply: more than one means Magpie answered a message twice. */
      const replyRowsByMarker = (): Map<string, number> => {
        const db = new Database(path.join(dataDir, "magpie.db"), { readonly: true, fileMustExist: true });
        try {
          const rows = new Map<string, number>();
          for (const payload of db.prepare("SELECT payload FROM outbox").pluck().all() as string[])
            for (const marker of new Set(payload.match(TOKEN) ?? []))
              rows.set(marker, (rows.get(marker) ?? 0) + 1);
          return rows;
        } finally {
          db.close();
        }
      };
      /** The kill that came first after a platform call: a send the platform took then was in flight at it. */
      const killAfter = (index: number): number => killWindows.findIndex((window) => window.to > index);
      const tally = () => {
        const copiesOf = new Map<string, Delivery[]>();
        const notices = new Map<string, Delivery[]>();
        for (const delivery of platform.deliveries()) {
          if (delivery.text.includes("interrupted"))
            notices.set(delivery.chat, [...(notices.get(delivery.chat) ?? []), delivery]);
          for (const marker of new Set(delivery.text.match(TOKEN) ?? []))
            copiesOf.set(marker, [...(copiesOf.get(marker) ?? []), delivery]);
        }
        const lines = linesOf();
        let replyRows: Map<string, number> | undefined;
        const counts = {
          answered: 0,
          interrupted: 0,
          lost: 0,
          doubledReplies: 0,
          resent: 0,
          doubledSideEffects: 0,
          answeredWithoutSideEffect: 0,
        };
        const interruptedNotices: string[] = [];
        const doubledDetail: unknown[] = [];
        /** Platform copies sent again after a kill (by their index in the call log), per kill. */
        const resentAt = new Map<number, Set<number>>();
        for (const message of sent) {
          const copies = copiesOf.get(message.marker) ?? [];
          if ((lines.get(message.marker) ?? 0) > 1) counts.doubledSideEffects++;
          if (copies.length >= 1 && lines.get(message.marker) !== 1) counts.answeredWithoutSideEffect++;
          if (copies.length === 1) counts.answered++;
          else if (copies.length > 1) {
            // The same reply sent again: the platform took it while the process was dying, before the outbox heard
            // back (Telegram takes no idempotency key) — one answer in the database, delivered again after the
            // restart. A reply in flight at two kills in a row (each restart resends it as the next kill comes) is
            // delivered three times. Each further copy must follow a kill that came after the copy before it.
            replyRows ??= replyRowsByMarker();
            const kills = copies.slice(1).map((copy, index) => {
              const kill = killAfter(copies[index]!.index);
              return kill >= 0 && copy.index >= killWindows[kill]!.to ? kill : -1;
            });
            const sameText = copies.every((copy) => copy.text === copies[0]!.text);
            if (sameText && replyRows.get(message.marker) === 1 && kills.every((kill) => kill >= 0)) {
              counts.answered++;
              for (const [index, kill] of kills.entries())
                resentAt.set(kill, (resentAt.get(kill) ?? new Set()).add(copies[index + 1]!.index));
            } else {
              counts.doubledReplies++;
              doubledDetail.push({
                marker: message.marker,
                copies,
                kills,
                rows: replyRows.get(message.marker),
              });
            }
          } else {
            const notice = (notices.get(message.chat) ?? []).find(
              (delivery) => delivery.index >= message.callsBefore,
            );
            if (notice) {
              counts.interrupted++;
              interruptedNotices.push(notice.text);
            } else counts.lost++;
          }
        }
        // One reply can answer several messages (collected into one turn): resends are counted as platform copies.
        counts.resent = [...resentAt.values()].reduce((sum, copies) => sum + copies.size, 0);
        const resentPerKill = [...resentAt.values()].map((copies) => copies.size);
        return { ...counts, interruptedNotices, doubledDetail, resentPerKill };
      };

      const deadline = Date.now() + SIZE.settleMs;
      while (tally().lost > 0 && Date.now() < deadline) await sleep(250);
      await sleep(1_000); // anything doubled late shows up now
      const { interruptedNotices, doubledDetail, resentPerKill, ...counts } = tally();
      const exitCode = await bot.stop();
      const db = new Database(path.join(dataDir, "magpie.db"), { readonly: true });
      const leftInJournal = db.prepare("SELECT count(*) FROM turn_steps").pluck().get();
      const unsentReplies = db.prepare("SELECT count(*) FROM outbox WHERE status != 'sent'").pluck().get();
      const outcomes = db
        .prepare(
          "SELECT coalesce(outcome, 'none') AS outcome, outcome_cause AS cause, count(*) AS n FROM inbox GROUP BY 1, 2",
        )
        .all();
      db.close();
      const report = {
        seed: random.seed,
        messages: SIZE.messages,
        chats: SIZE.chats,
        kills: bot.kills,
        ...counts,
        resentPerKill,
        outcomes,
        modelSaw: llm.seen,
        approvals: owner.approved(),
        llmRequests: llm.requests,
        llmFaults: llm.faults,
        interruptedNotices,
        seconds: Math.round((Date.now() - started) / 1000),
      };
      console.log(`tool crash soak: ${JSON.stringify(report)}`);

      expect(counts.lost, `lost messages; bot problems: ${bot.problems.slice(-5).join("\n")}`).toBe(0);
      expect(counts.doubledReplies, JSON.stringify(doubledDetail)).toBe(0);
      expect(counts.doubledSideEffects).toBe(0);
      expect(counts.answeredWithoutSideEffect).toBe(0);
      // A send in flight at a kill can repeat (the send/record window). The outbox sends one item at a time (one
      // channel here), so a kill finds at most one send the platform took and the outbox had not recorded.
      expect(Math.max(0, ...resentPerKill), JSON.stringify(resentPerKill)).toBeLessThanOrEqual(1);
      expect(counts.resent).toBeLessThanOrEqual(bot.kills);
      // "Interrupted" only where resuming was impossible (≤ 1 %), and each names what had been done.
      expect(counts.interrupted).toBeLessThanOrEqual(Math.floor(SIZE.messages / 100));
      for (const notice of interruptedNotices) expect(notice).toMatch(/interrupted/);
      expect(counts.answered + counts.interrupted).toBe(SIZE.messages);
      // The owner is asked only after a crash cut off an append (its file then can't be vouched for): for the
      // appends of a turn that checked the file after being told a call's outcome is unknown, or of a later turn
      // in that chat (what the check read stays in its history), never otherwise — and each prompt says so.
      expect(owner.approved()).toBeLessThanOrEqual(llm.seen.appendsAfterCheck);
      for (const prompt of owner.prompts())
        expect(prompt.split("\n", 1)[0]).toMatch(
          new RegExp(
            `untrusted content, after reading (earlier in this chat: )?file ${LINES_FILE.replace(".", "\\.")} \\(`,
          ),
        );
      expect(leftInJournal).toBe(0);
      expect(unsentReplies).toBe(0);
      expect(exitCode).toBe(0);
      expect(bot.stderr).toBe("");
    },
    FULL ? 900_000 : 90_000,
  );
});
