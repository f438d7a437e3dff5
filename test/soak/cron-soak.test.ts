import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { BotProcess } from "./bot-process.js";
import { FULL, seededRandom, sleep } from "./soak-size.js";

/**
 * Cron soak (issue 15): jobs every 2 s and one-shots while the real CLI is SIGKILLed and restarted (some
 * restarts after a few seconds of downtime, so catch-up runs). Every due slot ran once, or fell in a downtime
 * that was caught up once; no slot ran twice; every report was delivered once.
 */
const SIZE = FULL
  ? { seconds: 240, kills: 5, recurring: 3, oneShots: 8, maxDowntimeMs: 7_000 }
  : { seconds: 18, kills: 2, recurring: 2, oneShots: 3, maxDowntimeMs: 3_000 };
const EVERY_MS = 2_000;
const REPORT_CHAT = 424_242;

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => {});
});

interface Downtime {
  killedAt: number;
  readyAt: number;
}

interface RunRow {
  id: number;
  job_id: number;
  scheduled_at: number | null;
  status: string;
  trigger: string;
  output: string | null;
  delivery_state: string;
}

describe(`cron soak (${FULL ? "full" : "short"})`, () => {
  it(
    `jobs every 2 s and ${SIZE.oneShots} one-shots over ${SIZE.seconds} s with ${SIZE.kills} SIGKILLs: each due run once`,
    async () => {
      const random = seededRandom();
      const telegram = await new FakeTelegram().start();
      cleanup.push(() => telegram.close());
      const cwd = mkdtempSync(path.join(tmpdir(), "magpie-cron-soak-"));
      const begin = Date.now();
      const startAfterMs = 3_000; // the first start-up, before any slot is counted
      const oneShotTimes = Array.from({ length: SIZE.oneShots }, (_, index) =>
        Math.round(
          begin + startAfterMs + ((index + 0.5) / SIZE.oneShots) * (SIZE.seconds * 1000 - startAfterMs),
        ),
      );
      const deliver = { channel: "telegram", chatId: String(REPORT_CHAT), mode: "always" };
      const jobs = [
        ...Array.from({ length: SIZE.recurring }, (_, index) => ({
          name: `tick-${index}`,
          expression: "*/2 * * * * *",
          command: `echo tick-${index}-$(date +%s%N)`,
          deliver,
        })),
        ...oneShotTimes.map((at, index) => ({
          name: `once-${index}`,
          at: new Date(at).toISOString(),
          message: `one-shot once-${index} fired`,
          deliver,
        })),
      ];
      writeFileSync(
        path.join(cwd, "magpie.yaml"),
        JSON.stringify({
          dataDir: path.join(cwd, "data"),
          timezone: "UTC",
          http: { host: "127.0.0.1", port: 0 },
          channels: {
            telegram: {
              token: telegram.validToken,
              apiRoot: telegram.apiRoot,
              pacing: false,
              allowFrom: [REPORT_CHAT],
            },
          },
          cron: { catchUp: true, maxRunHistory: 10_000, jobs },
        }),
      );
      const bot = new BotProcess(cwd, "magpie.yaml");
      cleanup.push(() => bot.kill());
      await bot.start();
      const countFrom = Date.now() + EVERY_MS;

      const downtimes: Downtime[] = [];
      /** sendMessage call indexes around each kill: a send the platform accepted as the process died. */
      const killWindows: Array<{ from: number; to: number }> = [];
      const end = begin + SIZE.seconds * 1000;
      const killTimes = Array.from({ length: SIZE.kills }, () => random.int(countFrom, end - 3_000)).sort(
        (a, b) => a - b,
      );
      for (const [index, killTime] of killTimes.entries()) {
        await sleep(Math.max(0, killTime - Date.now()));
        if (random.chance(0.05)) telegram.failNext("sendMessage", 429, "Too Many Requests: retry after 1", 1);
        const killedAt = Date.now();
        const sendsBefore = telegram.callsOf("sendMessage").length;
        await bot.kill();
        // A request the dying process had already written is still read and answered by the fake after the exit.
        await sleep(150);
        killWindows.push({ from: sendsBefore, to: telegram.callsOf("sendMessage").length });
        // Half the restarts are immediate; the rest (always the first) miss slots, so catch-up has work.
        if (index === 0 || random.chance(0.5)) await sleep(random.int(2_500, SIZE.maxDowntimeMs));
        await bot.start();
        downtimes.push({ killedAt, readyAt: Date.now() });
      }
      await sleep(Math.max(0, end - Date.now()));
      const countUntil = Date.now() - EVERY_MS;
      await sleep(2_500); // deliveries of the last runs
      const exitCode = await bot.stop();

      const db = new Database(path.join(cwd, "data", "magpie.db"), { readonly: true });
      const jobIds = new Map(
        (db.prepare("SELECT id, name FROM cron_jobs").all() as Array<{ id: number; name: string }>).map(
          (row) => [row.name, row.id],
        ),
      );
      const runs = db.prepare("SELECT * FROM cron_runs ORDER BY id").all() as RunRow[];
      const outboxRowsWith = (text: string) =>
        db.prepare("SELECT count(*) FROM outbox WHERE payload LIKE ?").pluck().get(`%${text}%`) as number;
      const sends = telegram.callsOf("sendMessage").map((call, index) => ({ call, index }));
      const reports = sends.filter(({ call }) => !call.failed && Number(call.body.chat_id) === REPORT_CHAT);
      const delivered = reports.map(({ call }) => String(call.body.text));
      /**
       * Two copies of one outbox entry, the first accepted by the platform while the process was dying: the
       * outbox never heard back and sent it again after the restart (Telegram takes no idempotency key) — the
       * at-least-once window the README describes, counted apart as `resent`, never as a second run.
       */
      const resentAcrossKill = (text: string) => {
        const copies = reports.filter(({ call }) => String(call.body.text).includes(text));
        if (copies.length !== 2 || outboxRowsWith(text) !== 1) return false;
        const [first, second] = copies as [(typeof copies)[0], (typeof copies)[0]];
        // "As the process died" includes the moment just before the kill: the fake may have answered the send a
        // few milliseconds before SIGKILL, before the outbox could record it (so: one send before the window).
        return killWindows.some(
          (window) => first.index >= window.from - 1 && first.index < window.to && second.index >= window.to,
        );
      };

      const inDowntime = (at: number) =>
        downtimes.find((window) => at >= window.killedAt - 100 && at <= window.readyAt + 100);
      const counts = {
        slots: 0,
        ranOnce: 0,
        caughtUp: 0,
        missedInDowntime: 0,
        lost: 0,
        doubled: 0,
        skipped: 0,
      };
      const problems: string[] = [];
      for (let index = 0; index < SIZE.recurring; index++) {
        const jobId = jobIds.get(`tick-${index}`)!;
        // A `missed` row stands for the slots a catch-up run covered: it is no run of its own.
        const jobRuns = runs.filter((run) => run.job_id === jobId && run.status !== "missed");
        counts.skipped += jobRuns.filter((run) => run.status === "skipped").length;
        const firstSlot = Math.ceil(countFrom / EVERY_MS) * EVERY_MS;
        for (let slot = firstSlot; slot <= countUntil; slot += EVERY_MS) {
          counts.slots++;
          const atSlot = jobRuns.filter((run) => run.scheduled_at === slot);
          if (atSlot.length > 1) {
            counts.doubled++;
            problems.push(`tick-${index} slot ${new Date(slot).toISOString()} ran ${atSlot.length} times`);
          } else if (atSlot.length === 1) {
            if (atSlot[0]!.trigger === "catch_up") counts.caughtUp++;
            else counts.ranOnce++;
          } else {
            const window = inDowntime(slot);
            const caughtUp =
              window &&
              jobRuns.filter(
                (run) =>
                  run.trigger === "catch_up" &&
                  run.scheduled_at !== null &&
                  run.scheduled_at >= window.killedAt - EVERY_MS &&
                  run.scheduled_at <= window.readyAt,
              ).length === 1;
            if (caughtUp) counts.missedInDowntime++;
            else {
              counts.lost++;
              problems.push(
                `tick-${index} slot ${new Date(slot).toISOString()} never ran (not in a downtime)`,
              );
            }
          }
        }
        // A downtime is caught up at most once per job.
        for (const window of downtimes) {
          const catchUps = jobRuns.filter(
            (run) =>
              run.trigger === "catch_up" &&
              run.scheduled_at !== null &&
              run.scheduled_at >= window.killedAt - EVERY_MS &&
              run.scheduled_at <= window.readyAt,
          );
          if (catchUps.length > 1)
            problems.push(`tick-${index}: ${catchUps.length} catch-up runs for one downtime`);
        }
      }

      // One-shots: once each, however many restarts came before or after.
      const oneShots = { ran: 0, caughtUp: 0, doubled: 0, missing: 0, resent: 0 };
      for (let index = 0; index < SIZE.oneShots; index++) {
        const jobRuns = runs.filter((run) => run.job_id === jobIds.get(`once-${index}`));
        const texts = delivered.filter((text) => text.includes(`once-${index} fired`));
        const resent = jobRuns.length === 1 && resentAcrossKill(`once-${index} fired`);
        if (resent) oneShots.resent++;
        if (jobRuns.length === 1 && (texts.length === 1 || resent)) {
          if (jobRuns[0]!.trigger === "catch_up") oneShots.caughtUp++;
          else oneShots.ran++;
        } else if (jobRuns.length > 1 || texts.length > 1) {
          oneShots.doubled++;
          problems.push(`once-${index}: ${jobRuns.length} runs, ${texts.length} deliveries`);
        } else {
          oneShots.missing++;
          problems.push(`once-${index}: ${jobRuns.length} runs, ${texts.length} deliveries`);
        }
      }

      // Deliveries: each finished run's report arrived once (a run cut off by a kill may have none).
      const deliveries = { delivered: 0, doubled: 0, missing: 0, resent: 0 };
      for (const run of runs) {
        const token = /tick-\d+-\d+/.exec(run.output ?? "")?.[0];
        if (!token) continue;
        const copies = delivered.filter((text) => text.includes(token)).length;
        if (copies === 2 && resentAcrossKill(token)) {
          deliveries.resent++;
          deliveries.delivered++;
        } else if (copies > 1) {
          deliveries.doubled++;
          problems.push(`run #${run.id} delivered ${copies} times`);
        } else if (copies === 1) deliveries.delivered++;
        else if (run.status === "ok") {
          deliveries.missing++;
          problems.push(`run #${run.id} (${run.status}, ${run.delivery_state}) never delivered`);
        }
      }

      db.close();

      const report = {
        seed: random.seed,
        seconds: Math.round((Date.now() - begin) / 1000),
        kills: bot.kills,
        downtimesMs: downtimes.map((window) => window.readyAt - window.killedAt),
        recurring: counts,
        oneShots,
        deliveries,
        runs: runs.length,
      };
      console.log(`cron soak: ${JSON.stringify(report)}`);
      expect(problems).toEqual([]);
      expect(counts.ranOnce + counts.caughtUp + counts.missedInDowntime).toBe(counts.slots);
      expect(oneShots.ran + oneShots.caughtUp).toBe(SIZE.oneShots);
      // At most one send can be in flight per kill for the report chat.
      expect(oneShots.resent + deliveries.resent).toBeLessThanOrEqual(bot.kills);
      expect(exitCode).toBe(0);
      expect(bot.stderr).toBe("");
    },
    FULL ? 600_000 : 60_000,
  );
});
