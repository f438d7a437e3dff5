import type Database from "better-sqlite3";
import type { Db } from "./database.js";

/** Statements kept per connection; beyond this many texts a statement is prepared afresh each time. */
const LIMIT = 256;
const caches = new WeakMap<Db, Map<string, Database.Statement>>();

/**
 * The statement for `sql` on `db`, prepared once per connection (issue 35, hot path): the repositories on the
 * message path prepared each statement per call, a dozen compilations by SQLite per message. For statements run
 * with `run`/`get`/`all` in their default mode only — `iterate` keeps a statement busy until its loop ends, and
 * `pluck`/`raw`/`expand` change the shared statement's mode for every caller.
 */
export function prepared(db: Db, sql: string): Database.Statement {
  let cache = caches.get(db);
  if (!cache) {
    cache = new Map();
    caches.set(db, cache);
  }
  const found = cache.get(sql);
  if (found) return found;
  const statement = db.prepare(sql);
  if (cache.size < LIMIT) cache.set(sql, statement);
  return statement;
}
