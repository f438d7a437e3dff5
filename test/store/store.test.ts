import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { migrate, openDatabase } from "../../src/store/database.js";
import { Store } from "../../src/store/index.js";
import { migrations } from "../../src/store/migrations/index.js";

describe("store", () => {
  it("opens with WAL and foreign keys and runs every migration once", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-store-"));
    const store = Store.open(dir);
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(store.db.pragma("foreign_keys", { simple: true })).toBe(1);
    const tables = store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    expect(tables).toEqual(
      expect.arrayContaining(["inbox", "outbox", "sessions", "messages", "audit", "kv"]),
    );
    const applied = store.db.prepare("SELECT version FROM schema_migrations ORDER BY version").pluck().all();
    expect(applied).toEqual(migrations.map((migration) => migration.version).sort((a, b) => a - b));
    expect(migrate(store.db, migrations)).toEqual([]);
    store.close();
    const reopened = Store.open(dir);
    expect(reopened.kv.get("missing", z.unknown())).toBeUndefined();
    reopened.close();
  });

  it("bounds SQLite's memory on purpose: a 4 MiB page cache, no memory-mapped I/O (issue 37)", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-store-"));
    const store = Store.open(dir);
    expect(store.db.pragma("cache_size", { simple: true })).toBe(-4096);
    expect(store.db.pragma("mmap_size", { simple: true })).toBe(0);
    store.close();
  });

  it("rolls back a failing migration and leaves it unrecorded", () => {
    const db = openDatabase(":memory:", []);
    expect(() =>
      migrate(db, [{ version: 900, name: "broken", up: "CREATE TABLE ok (x); CREATE TABLE ok (x);" }]),
    ).toThrow();
    expect(db.prepare("SELECT COUNT(*) FROM schema_migrations").pluck().get()).toBe(0);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'ok'").get()).toBeUndefined();
  });

  it("dedupes inbox items on (channel, messageId)", () => {
    const store = Store.open(":memory:");
    const message = {
      channel: "telegram",
      chatId: "1",
      messageId: "9",
      userId: "u",
      userName: "U",
      text: "hi",
      isDirect: true,
      mentionsBot: false,
      attachments: [],
      receivedAt: 1,
      raw: { secret: "not persisted" },
    };
    const id = store.inbox.insert(message, "telegram:1");
    expect(id).toBeTypeOf("number");
    expect(store.inbox.insert(message, "telegram:1")).toBeNull();
    expect(store.inbox.insert({ ...message, channel: "discord" }, "discord:1")).toBeTypeOf("number");
    expect(store.inbox.get(id!)!.message).not.toHaveProperty("raw");
  });

  it("keeps history per session and compacts atomically", () => {
    const store = Store.open(":memory:");
    store.history.ensureSession("s", "main");
    store.history.append("s", [
      { message: { role: "user", content: "a" }, tokens: 5 },
      {
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }],
        },
        tokens: 5,
      },
      { message: { role: "tool", tool_call_id: "c1", content: "r" }, tokens: 5 },
      { message: { role: "assistant", content: "done" }, tokens: 5 },
    ]);
    const loaded = store.history.load("s");
    expect(loaded.map((item) => item.message)).toEqual([
      { role: "user", content: "a" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "r" },
      { role: "assistant", content: "done" },
    ]);
    store.history.compact("s", loaded[1]!.id, "summary text");
    expect(store.history.load("s")).toHaveLength(2);
    expect(store.history.summary("s")).toBe("summary text");
    store.history.reset("s");
    expect(store.history.stats("s")).toEqual({ messages: 0, tokens: 0, hasSummary: false });
  });
});
