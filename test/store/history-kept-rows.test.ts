import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Store } from "../../src/store/index.js";

/** History rows are checked and turned into messages once, and kept (issue 35, hot path): what is kept must never hide a change. */
describe("history rows kept between reads", () => {
  const open = () => Store.open(mkdtempSync(path.join(tmpdir(), "magpie-history-kept-")));

  it("hands out the same frozen messages for unchanged rows, and sees a message appended next", () => {
    const store = open();
    store.history.ensureSession("s", "main");
    store.history.append("s", [
      { message: { role: "user", content: "hello" }, tokens: 2 },
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
    const first = store.history.newest("s", 1000).messages;
    const second = store.history.newest("s", 1000).messages;
    expect(second.map((item) => item.message)).toEqual(first.map((item) => item.message));
    expect(second[1]!.message).toBe(first[1]!.message);
    expect(Object.isFrozen(first[1]!.message)).toBe(true);
    const assistant = first[1]!.message;
    expect(assistant.role === "assistant" && Object.isFrozen(assistant.tool_calls)).toBe(true);
    store.history.append("s", [{ message: { role: "user", content: "again" }, tokens: 2 }]);
    expect(store.history.newest("s", 1000).messages.map((item) => item.message.content)).toEqual([
      "hello",
      null,
      "[]",
      "again",
    ]);
    store.close();
  });

  it("reads afresh a row id SQLite reused after a delete (another message under the same id)", () => {
    const store = open();
    store.history.ensureSession("s", "main");
    store.history.append("s", [{ message: { role: "user", content: "the old text" }, tokens: 3 }]);
    const [old] = store.history.newest("s", 1000).messages;
    store.history.reset("s");
    store.history.append("s", [{ message: { role: "user", content: "the new text" }, tokens: 3 }]);
    const [now] = store.history.newest("s", 1000).messages;
    // Without AUTOINCREMENT the deleted highest id is handed out again: the kept message must not be returned for it.
    expect(now!.id).toBe(old!.id);
    expect(now!.message.content).toBe("the new text");
    store.close();
  });

  it("still checks a changed row against its schema", () => {
    const store = open();
    store.history.ensureSession("s", "main");
    store.history.append("s", [{ message: { role: "user", content: "hi" }, tokens: 1 }]);
    store.history.newest("s", 1000);
    // Another process (or an older version) wrote a row this version can't read: the read fails loudly.
    store.db.pragma("ignore_check_constraints = ON");
    store.db.prepare("UPDATE messages SET tokens = 'many' WHERE session_key = 's'").run();
    expect(() => store.history.newest("s", 1000)).toThrow(/messages row/);
    store.close();
  });

  it("tells whether a session is past a budget exactly as the full read does (the compaction check)", () => {
    const store = open();
    store.history.ensureSession("s", "main");
    store.history.append(
      "s",
      [3, 5, 7, 11].map((tokens, index) => ({ message: { role: "user", content: `m${index}` }, tokens })),
    );
    for (let budget = 0; budget <= 30; budget++)
      expect(store.history.exceeds("s", budget)).toBe(store.history.newest("s", budget).more);
    expect(store.history.exceeds("empty", 0)).toBe(false);
    store.close();
  });
});
