import type { Statement } from "better-sqlite3";
import type { Db } from "./database.js";

/**
 * The change counters SQLite's triggers keep (migration 037): `messages:<session>` moves with every message row of
 * that session inserted, deleted or updated, `core:<agent>` with every core memory of that agent, whichever
 * connection writes. Read the counter before the rows it guards: rows read after it are at least that new, so a
 * change in between only costs one more read.
 */
export class ChangeCounters {
  private statement: Statement | undefined;

  constructor(private readonly db: Db) {}

  /** The counter's value now (0 before its first change). */
  get(name: string): number {
    this.statement ??= this.db.prepare("SELECT n FROM change_counters WHERE name = ?").pluck();
    const n: unknown = this.statement.get(name);
    return typeof n === "number" ? n : 0;
  }
}
