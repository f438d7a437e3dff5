import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { startTelegramApp } from "../helpers/telegram-app.js";

it("profile", async () => {
  const spent = new Map<string, { n: number; ms: number; rows: number }>();
  let recording = false;
  const probe = new Database(":memory:");
  const proto = Object.getPrototypeOf(probe.prepare("SELECT 1"));
  for (const method of ["run", "get", "all"]) {
    const original = proto[method];
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      const t = performance.now();
      const result = original.apply(this, args);
      if (recording) {
        const e = spent.get(this.source) ?? { n: 0, ms: 0, rows: 0 };
        e.n++; e.ms += performance.now() - t; e.rows += Array.isArray(result) ? result.length : 1;
        spent.set(this.source, e);
      }
      return result;
    };
  }
  const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-prof-"));
  copyFileSync(`${process.env.SEED_DIR}/magpie.db`, path.join(dataDir, "magpie.db"));
  const tg = await startTelegramApp({
    access: { allowFrom: [9000, 9001, 9002, 9003, 9004, 9005, 9006, 9007] },
    config: {},
    app: { dataDir },
  });
  const { telegram } = tg;
  (telegram as unknown as { nextMessageId: number }).nextMessageId = 50_000_000;
  const { llm, app } = tg.testApp;
  if (process.env.CACHE_KIB) app.store.db.pragma(`cache_size = -${process.env.CACHE_KIB}`);
  console.log("cache", app.store.db.pragma("cache_size", { simple: true }));
  await new Promise((r) => setTimeout(r, 3000));
  recording = true;
  const t0 = performance.now();
  for (let i = 0; i < 120; i++) {
    llm!.script(reply.text(`ok ${i}`));
    telegram.pushMessage({ chat: { id: 9000 + (i % 8), type: "private" }, from: { id: 9000 + (i % 8) }, text: `h${i}x please check the backup and the sensor before tomorrow` });
    await waitFor(() => telegram.sentTexts().length > i, "reply", 30_000);
    await app.router.queues.idle();
  }
  recording = false;
  console.log("total ms", performance.now() - t0, "sql ms", [...spent.values()].reduce((a, e) => a + e.ms, 0));
  const sorted = [...spent].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25);
  for (const [sql, e] of sorted) console.log(e.ms.toFixed(1), e.n, e.rows, sql.replace(/\s+/g, " ").slice(0, 200));
  await tg.stop({ keepData: false });
  expect(spent.size).toBeGreaterThan(0);
}, 200_000);
