import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { BotProcess } from "../soak/bot-process.js";

const REPORT_CHAT = 515_151;
const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => {});
});

/**
 * SIGTERM while a cron run with a chat report is going: the run is interrupted and its report queued after the
 * outbox worker stopped. Waiting for that report's delivery (a 2-minute timer) must not keep the stopped process
 * alive until the 10 s force-exit turns a clean stop into exit code 1 (seen in the cron soak under load).
 */
describe("magpie start: SIGTERM during a cron run that reports to a chat", () => {
  it("exits 0 promptly; the interrupted run is recorded and its report stays queued", async () => {
    const telegram = await new FakeTelegram().start();
    cleanup.push(() => telegram.close());
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-cron-stop-"));
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
        cron: {
          jobs: [
            {
              name: "slow",
              expression: "* * * * * *",
              command: "sleep 30",
              deliver: { channel: "telegram", chatId: String(REPORT_CHAT), mode: "always" },
            },
          ],
        },
      }),
    );
    const bot = new BotProcess(cwd, "magpie.yaml");
    cleanup.push(() => bot.kill());
    await bot.start();

    const db = new Database(path.join(cwd, "data", "magpie.db"), { readonly: true });
    cleanup.push(async () => db.close());
    const running = () =>
      db.prepare("SELECT count(*) FROM cron_runs WHERE status = 'running'").pluck().get() as number;
    const deadline = Date.now() + 10_000;
    while (running() === 0) {
      if (Date.now() > deadline) throw new Error("the cron run never started");
      await new Promise((resolve) => setTimeout(resolve, 25));
    }

    const stopAt = Date.now();
    const exitCode = await bot.stop();
    const stopMs = Date.now() - stopAt;
    expect(exitCode).toBe(0);
    expect(stopMs).toBeLessThan(8_000);
    expect(bot.stderr).toBe("");
    const runs = db.prepare("SELECT status, output FROM cron_runs").all() as Array<{
      status: string;
      output: string;
    }>;
    // Slots that came while the run ran are recorded as missed (runs never overlap); the one that ran was cut off.
    expect(runs.filter((run) => run.status !== "missed")).toEqual([
      { status: "error", output: expect.stringContaining("interrupted") },
    ]);
    // The report was queued, not lost: the next start delivers it.
    expect(db.prepare("SELECT count(*) FROM outbox WHERE status = 'pending'").pluck().get() as number).toBe(
      1,
    );
  }, 40_000);
});
