import { describe, expect, it } from "vitest";
import { z } from "zod";
import { JsonShapeError, parseJson, safeParseJson } from "../../src/lib/parse-json.js";
import { row } from "../../src/lib/row.js";
import { Store } from "../../src/store/index.js";

const job = z.object({ name: z.string(), deliver: z.object({ mode: z.enum(["always", "none"]) }) });

describe("parseJson", () => {
  it("returns the value when the JSON has the shape", () => {
    expect(parseJson('{"name":"x","deliver":{"mode":"none"}}', job)).toEqual({
      name: "x",
      deliver: { mode: "none" },
    });
  });

  it("names what was read and the first wrong key path, never passing a wrong shape on", () => {
    const parsed = safeParseJson('{"name":"x","deliver":{"mode":"sometimes"}}', job, "cron_jobs.deliver");
    expect(parsed.success).toBe(false);
    if (parsed.success) return;
    expect(parsed.error).toBeInstanceOf(JsonShapeError);
    expect(parsed.error.code).toBe("json.invalid");
    expect(parsed.error.message).toMatch(/^cron_jobs\.deliver: deliver\.mode: /);
  });

  it("turns text that is not JSON into the same error (no SyntaxError escapes)", () => {
    expect(() => parseJson("{not json", job, "outbox payload")).toThrow(/^outbox payload: /);
    expect(() => parseJson("{not json", job)).toThrow(JsonShapeError);
  });
});

describe("row readers", () => {
  const reader = row(z.object({ id: z.number(), status: z.enum(["pending", "sent"]) }), "outbox");

  it("read rows of the shape and keep a missing row undefined", () => {
    expect(reader.one({ id: 1, status: "sent" })).toEqual({ id: 1, status: "sent" });
    expect(reader.one(undefined)).toBeUndefined();
    expect(
      reader.all([
        { id: 1, status: "sent" },
        { id: 2, status: "pending" },
      ]),
    ).toHaveLength(2);
    expect([...reader.each([{ id: 3, status: "sent" }])]).toEqual([{ id: 3, status: "sent" }]);
  });

  it("fail loudly on a renamed column or a value outside the schema, naming the table and the column", () => {
    expect(() => reader.one({ id: 1, state: "sent" })).toThrow(/^outbox row: status: /);
    expect(() => reader.all([{ id: "1", status: "sent" }])).toThrow(/^outbox row: id: /);
    expect(() => reader.only(undefined)).toThrow(JsonShapeError);
  });

  it("check kv values against the caller's schema", () => {
    const store = Store.open(":memory:");
    try {
      store.kv.set("cursor", { lastUid: "12" });
      expect(() => store.kv.get("cursor", z.object({ lastUid: z.number() }))).toThrow(
        /kv "cursor": lastUid: /,
      );
      expect(store.kv.get("cursor", z.object({ lastUid: z.string() }))).toEqual({ lastUid: "12" });
      expect(store.kv.get("missing", z.string())).toBeUndefined();
      expect(store.kv.has("cursor")).toBe(true);
    } finally {
      store.close();
    }
  });
});
