import { z } from "zod";
import { parseJson } from "../lib/parse-json.js";
import { row } from "../lib/row.js";
import type { Db } from "./database.js";
import { prepared } from "./prepared.js";

const valueRow = row(z.object({ value: z.string() }), "kv");

/** A small key-value table for state that doesn't deserve its own (offsets, flags). */
export class KvRepository {
  constructor(private readonly db: Db) {}

  /**
   * The value under `key` checked against `schema` (undefined when there is none). A stored value of another
   * shape is a bug or a hand-edited database: it throws a `JsonShapeError` naming the key, never passes as cast.
   */
  get<T>(key: string, schema: z.ZodType<T>): T | undefined {
    const stored = valueRow.one(prepared(this.db, "SELECT value FROM kv WHERE key = ?").get(key));
    return stored ? parseJson(stored.value, schema, `kv "${key}"`) : undefined;
  }

  /** Whether anything is stored under `key`. */
  has(key: string): boolean {
    return prepared(this.db, "SELECT 1 FROM kv WHERE key = ?").get(key) !== undefined;
  }

  set(key: string, value: unknown): void {
    prepared(
      this.db,
      "INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    ).run(key, JSON.stringify(value), Date.now());
  }

  delete(key: string): void {
    prepared(this.db, "DELETE FROM kv WHERE key = ?").run(key);
  }
}
