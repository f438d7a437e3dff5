import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryRepository } from "../../src/memory/memory-repository.js";
import { HistoryRepository } from "../../src/store/history.js";
import { Store } from "../../src/store/index.js";

/**
 * Issue 35, hot path: a turn's history window and the core memories are kept between turns and read again only
 * when SQLite's change counter for them moved (migration 037). Whatever writes — this process's repository, raw SQL
 * on the same connection (retention), another process, an update in place — the kept list must be exactly what a
 * fresh read returns.
 */
const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

function setUp() {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-change-counters-"));
  const store = Store.open(dir);
  // Another process's connection (`magpie` commands, an old release after a rollback).
  const other = new Database(store.db.name);
  closers.push(
    () => other.close(),
    () => store.close(),
  );
  return { store, other };
}

const user = (content: string, tokens = 3) => ({ message: { role: "user" as const, content }, tokens });
/** What a reader without anything kept returns. */
const fresh = (store: Store, key: string, budget: number) => {
  const read = new HistoryRepository(store.db).newest(key, budget);
  return { more: read.more, messages: read.messages.map((item) => [item.id, item.message, item.tokens]) };
};
const kept = (store: Store, key: string, budget: number) => {
  const read = store.history.newest(key, budget);
  return { more: read.more, messages: read.messages.map((item) => [item.id, item.message, item.tokens]) };
};

describe("history windows kept between turns", () => {
  it("ATTACK: every kind of write is seen at the next read, exactly as a fresh read sees it", () => {
    const { store, other } = setUp();
    store.history.ensureSession("s", "main");
    store.history.ensureSession("t", "main");
    const budget = 40;
    const check = () => {
      expect(kept(store, "s", budget)).toEqual(fresh(store, "s", budget));
      expect(kept(store, "s", 10)).toEqual(fresh(store, "s", 10));
      expect(store.history.exceeds("s", 20)).toBe(new HistoryRepository(store.db).exceeds("s", 20));
    };
    store.history.append("s", [user("one"), user("two")]);
    check();
    // This process's turn appends (the window goes on with its rows).
    store.history.append("s", [
      user("three"),
      {
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "cron_list", arguments: "{}" } }],
        },
        tokens: 5,
      },
      { message: { role: "tool", tool_call_id: "c1", content: "[]" }, tokens: 1 },
    ]);
    check();
    // Another session's rows move nothing here.
    store.history.append("t", [user("elsewhere")]);
    check();
    // Another process inserts, deletes and updates in place.
    other
      .prepare(
        "INSERT INTO messages (session_key, role, content, tokens, created_at) VALUES ('s', 'user', ?, 4, 0)",
      )
      .run("from the CLI");
    check();
    other.prepare("UPDATE messages SET content = 'edited' WHERE content = 'two'").run();
    check();
    other.prepare("DELETE FROM messages WHERE content = 'three'").run();
    check();
    // Retention on this connection (raw SQL, not the repository).
    store.db.prepare("DELETE FROM messages WHERE content = 'one'").run();
    check();
    // A message moved to another session in place.
    store.db.prepare("UPDATE messages SET session_key = 't' WHERE content = 'edited'").run();
    check();
    expect(kept(store, "t", budget)).toEqual(fresh(store, "t", budget));
    // Compaction and /reset.
    const last = store.history.newest("s", budget).messages.at(-1)!;
    store.history.compact("s", last.id - 1, "summary");
    check();
    store.history.reset("s");
    check();
    // Past the budget: the window is cut and says there is more.
    for (let index = 0; index < 30; index++) store.history.append("s", [user(`m${index}`)]);
    check();
    expect(kept(store, "s", budget).more).toBe(true);
  });

  it("ATTACK: another process writes between a turn's read and its append: the window is dropped, not extended", () => {
    const { store, other } = setUp();
    store.history.ensureSession("s", "main");
    store.history.append("s", [user("one")]);
    store.history.newest("s", 100);
    other
      .prepare(
        "INSERT INTO messages (session_key, role, content, tokens, created_at) VALUES ('s', 'user', 'sneaked', 3, 0)",
      )
      .run();
    store.history.append("s", [user("two")]);
    expect(kept(store, "s", 100)).toEqual(fresh(store, "s", 100));
    expect(kept(store, "s", 100).messages.map((row) => (row[1] as { content: string }).content)).toEqual([
      "one",
      "sneaked",
      "two",
    ]);
  });

  it("keeps text SQLite stores differently (a lone surrogate) out of the window: read as stored", () => {
    const { store } = setUp();
    store.history.ensureSession("s", "main");
    store.history.append("s", [user("one")]);
    store.history.newest("s", 100);
    store.history.append("s", [user("half \ud83d of an emoji")]);
    expect(kept(store, "s", 100)).toEqual(fresh(store, "s", 100));
  });

  it("serves an unchanged session without reading its rows", () => {
    const { store } = setUp();
    store.history.ensureSession("s", "main");
    store.history.append("s", [user("one"), user("two")]);
    const first = store.history.newest("s", 100).messages;
    store.history.append("s", [user("three")]);
    const second = store.history.newest("s", 100).messages;
    // The same frozen entries: nothing was read or built again.
    expect(second[0]).toBe(first[0]);
    expect(second.map((item) => item.message.content)).toEqual(["one", "two", "three"]);
    expect(store.db.prepare("SELECT n FROM change_counters WHERE name = 'messages:s'").pluck().get()).toBe(3);
  });
});

describe("core memories kept between turns", () => {
  const core = (key: string, content: string) => ({
    agent: "main",
    key,
    content,
    category: "core" as const,
    audience: "owners" as const,
  });
  const view = (records: Array<{ key: string; content: string; accessCount: number }>) =>
    records.map((record) => [record.key, record.content, record.accessCount]);

  it("ATTACK: a core memory stored, edited, recalled, re-categorized or deleted — here or by another process — is seen", () => {
    const { store, other } = setUp();
    const repository = new MemoryRepository(store.db);
    const read = () => view(repository.core("main", ["owners"], 50));
    const truth = () => view(new MemoryRepository(store.db).core("main", ["owners"], 50));
    repository.upsert(core("tea", "green tea"), 1_000);
    repository.upsert(core("city", "Leeds"), 1_001);
    expect(read()).toEqual(truth());
    // Recalled: the access count reorders the list.
    const tea = repository.get("main", "tea")!;
    repository.recordAccess([tea.id], 2_000);
    expect(read()).toEqual(truth());
    expect(read()[0]![0]).toBe("tea");
    other.prepare("UPDATE memories SET content = 'black tea' WHERE key = 'tea'").run();
    expect(read()).toEqual(truth());
    other.prepare("UPDATE memories SET access_count = 9 WHERE key = 'city'").run();
    expect(read()[0]![0]).toBe("city");
    other.prepare("UPDATE memories SET category = 'daily' WHERE key = 'city'").run();
    expect(read()).toEqual(truth());
    other.prepare("UPDATE memories SET category = 'core' WHERE key = 'city'").run();
    expect(read()).toEqual(truth());
    other.prepare("UPDATE memories SET agent = 'other' WHERE key = 'city'").run();
    expect(read()).toEqual(truth());
    other
      .prepare(
        "INSERT INTO memories (agent, key, content, category, audience, created_at, updated_at) VALUES ('main', 'dog', 'Rex', 'core', 'owners', 3, 3)",
      )
      .run();
    expect(read()).toEqual(truth());
    repository.delete("main", "tea");
    expect(read()).toEqual(truth());
    expect(read().map((row) => row[0])).toEqual(["dog"]);
  });

  it("is not read again for a change to a memory that is not core", () => {
    const { store } = setUp();
    const repository = new MemoryRepository(store.db);
    repository.upsert(core("tea", "green tea"), 1_000);
    const first = repository.core("main", ["owners"], 50);
    repository.upsert({ ...core("note", "a fact"), category: "daily" as const }, 1_001);
    const fact = repository.get("main", "note")!;
    repository.recordAccess([fact.id], 2_000);
    expect(store.db.prepare("SELECT n FROM change_counters WHERE name = 'core:main'").pluck().get()).toBe(1);
    expect(repository.core("main", ["owners"], 50)[0]).toBe(first[0]);
  });
});
