import Database from "better-sqlite3";
import { expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { startTelegramApp } from "../helpers/telegram-app.js";

it("explore", async () => {
  const seen = new Map<string, number>();
  let recording = false;
  const probe = new Database(":memory:");
  const proto = Object.getPrototypeOf(probe.prepare("SELECT 1"));
  for (const method of ["run", "get", "all", "iterate"]) {
    const original = proto[method];
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      if (recording) seen.set(this.source, (seen.get(this.source) ?? 0) + 1);
      return original.apply(this, args);
    };
  }
  const tg = await startTelegramApp({
    access: { allowFrom: [777] },
    config: { llm: { embeddingModel: "embed-small" }, agent: { historyTokens: 300 } },
  });
  const { telegram } = tg;
  const { llm, app } = tg.testApp;
  recording = true;
  for (let i = 0; i < 4; i++) {
    llm!.script(
      reply.toolCalls([{ name: "memory_store", arguments: { key: `k${i}`, content: `fact ${i} about coffee` } }]),
      reply.text(`Noted ${"y".repeat(300)}`),
      reply.text("SUMMARY"),
    );
    telegram.pushMessage({ chat: { id: 777, type: "private" }, from: { id: 777 }, text: `remember coffee ${i} ${"x".repeat(200)}` });
    await waitFor(() => telegram.sentTexts().length > i, "reply");
    await app.router.queues.idle();
  }
  recording = false;
  const db = app.store.db;
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type='table'").pluck().all() as string[];
  for (const t of tables) console.log(t, (db.prepare(`SELECT COUNT(*) FROM "${t}"`).pluck().get()));
  for (const t of ["inbox","outbox","trace_events","llm_usage","audit","messages","sessions","memories"]) console.log(t, JSON.stringify(db.prepare(`SELECT * FROM ${t}`).all().slice(0, 12)));
  for (const [sql, n] of seen) console.log(n, sql.replace(/\s+/g, " ").slice(0, 250));
  await tg.stop();
  expect(seen.size).toBeGreaterThan(0);
}, 60_000);
