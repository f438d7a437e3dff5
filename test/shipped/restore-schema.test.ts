import { copyFileSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * The shipped build's `magpie restore` refuses a backup whose schema holds objects Magpie's migrations don't
 * create — a trigger that makes a stranger an owner on the next message, a view, an index, a changed table, a
 * trigger named like a real index, an fts5 table, a name full of terminal escapes — with exit 1, the object named,
 * the live database untouched. And the trigger is a live payload: put in place by hand (what restore used to do),
 * the stranger is answered as an owner.
 */

const OWNER = 812;
const STRANGER = 666;

const MAKE_OWNER = `CREATE TRIGGER make_owner AFTER INSERT ON inbox BEGIN
  INSERT OR IGNORE INTO approved_senders (channel, user_id, approved_at, approved_by)
  VALUES ('telegram', '${STRANGER}', 0, 'backup');
END`;

describe("shipped build: restore refuses a backup with objects of its own", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;
  let clean: string;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        tools: { shell: { sandbox: "off" } },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
      },
    });
    await say(OWNER, "hello", "Hello, owner");
    // Without the payload the stranger is a stranger: a pairing code, no turn.
    const turns = llm.requests.length;
    telegram.pushMessage({ chat: { id: STRANGER, type: "private" }, from: { id: STRANGER }, text: "hi" });
    await waitFor(
      () => telegram.sentTexts().find((text) => text.startsWith("Hi! I don't know you yet.")),
      "the stranger's pairing code",
      20_000,
    );
    expect(llm.requests.length).toBe(turns);
    clean = path.join(bot.dir, "clean.db");
    const saved = await bot.cli(["backup", "--to", clean]);
    expect(saved.code, saved.stderr).toBe(0);
    expect(await bot.stop()).toBe(0);
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  async function say(from: number, text: string, answer: string): Promise<void> {
    llm.script(reply.text(answer));
    telegram.pushMessage({ chat: { id: from, type: "private" }, from: { id: from }, text });
    await waitFor(() => telegram.sentTexts().includes(answer), `the answer "${answer}"`, 20_000);
  }

  /** A copy of the clean backup with `sql` run in it. */
  function tampered(name: string, sql: string): string {
    const file = path.join(bot.dir, `${name}.db`);
    copyFileSync(clean, file);
    const db = new Database(file);
    db.exec(sql);
    db.close();
    return file;
  }

  const cases: Array<{ name: string; sql: string; named: string }> = [
    {
      name: "trigger",
      sql: MAKE_OWNER,
      named: `not created by Magpie's migrations: trigger "make_owner" (on "inbox")`,
    },
    {
      name: "view",
      sql: "CREATE VIEW owners AS SELECT * FROM approved_senders",
      named: `not created by Magpie's migrations: view "owners"`,
    },
    {
      name: "index",
      sql: "CREATE INDEX kv_value ON kv (value)",
      named: `not created by Magpie's migrations: index "kv_value" (on "kv")`,
    },
    {
      name: "default",
      // kv rebuilt with a default its migration doesn't give it.
      sql: `ALTER TABLE kv RENAME TO kv_old;
            CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT 'owner', updated_at INTEGER NOT NULL);
            INSERT INTO kv SELECT * FROM kv_old; DROP TABLE kv_old;`,
      named: `changed from what the migrations create: table "kv"`,
    },
    {
      name: "lookalike",
      sql: "CREATE TRIGGER inbox_open AFTER INSERT ON kv BEGIN DELETE FROM audit; END",
      named: `not created by Magpie's migrations: trigger "inbox_open" (on "kv")`,
    },
    {
      name: "fts",
      sql: "CREATE VIRTUAL TABLE shadow_search USING fts5(body)",
      named: `table "shadow_search"`,
    },
    {
      name: "escapes",
      sql: `CREATE TRIGGER "\u001b[2J\u001b[32m✓ restored\u001b[0m\n" AFTER INSERT ON kv BEGIN SELECT 1; END`,
      named: `trigger "\\u001b[2J\\u001b[32m✓ restored\\u001b[0m\\u000a" (on "kv")`,
    },
  ];

  it("refuses each, naming the object, exit 1, the live database untouched", async () => {
    const live = path.join(bot.dataDir, "magpie.db");
    const before = readFileSync(live);
    for (const attack of cases) {
      const file = tampered(attack.name, attack.sql);
      const result = await bot.cli(["restore", file]);
      expect(result.code, `${attack.name}: ${result.stdout}${result.stderr}`).toBe(1);
      expect(result.stderr, attack.name).toContain(
        `✗ ${file} has a schema that Magpie's migrations don't make`,
      );
      expect(result.stderr, attack.name).toContain(attack.named);
      expect(result.stderr, attack.name).toContain("Nothing was changed.");
      expect(result.stderr, attack.name).not.toContain("\u001b");
      expect(readFileSync(live).equals(before), attack.name).toBe(true);
    }
    const untouched = await bot.cli(["restore", clean]);
    expect(untouched.code, untouched.stderr).toBe(0);
  }, 60_000);

  it("the trigger is a live payload: in place by hand, the stranger is an owner after the owner's next message", async () => {
    const live = path.join(bot.dataDir, "magpie.db");
    for (const suffix of ["-wal", "-shm"]) rmSync(`${live}${suffix}`, { force: true });
    copyFileSync(tampered("payload", MAKE_OWNER), live);
    await bot.relaunch();
    await say(OWNER, "good morning", "Morning, owner");
    await say(STRANGER, "make me a sandwich", "Here is your sandwich, new owner");
    const database = new Database(live, { readonly: true });
    try {
      expect(
        database
          .prepare("SELECT approved_by FROM approved_senders WHERE user_id = ?")
          .pluck()
          .get(String(STRANGER)),
      ).toBe("backup");
    } finally {
      database.close();
    }
    llm.assertDone();
  }, 60_000);
});
