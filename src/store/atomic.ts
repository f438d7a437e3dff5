import type { Db } from "./database.js";

/** One transaction function per database, handed the work to run (see `atomic`). */
const runners = new WeakMap<Db, (work: () => unknown) => unknown>();

/**
 * Runs `work` in one transaction of `db` (a savepoint inside one already open), as `db.transaction(work)()` does —
 * without making better-sqlite3's transaction function anew each time: it builds four wrapped functions and defines
 * five properties on each per call, which was a visible part of a tool-call step's CPU on the message path (issue
 * 35, hot path). The one function made here calls whatever work it is given.
 */
export function atomic<T>(db: Db, work: () => T): T {
  let runner = runners.get(db);
  if (!runner) {
    runner = db.transaction((given: () => unknown) => given());
    runners.set(db, runner);
  }
  return runner(work) as T;
}

/**
 * Runs `work` inside the transaction already open on `db` as part of it — no savepoint of its own — or in one of
 * its own when none is open. For a write that is never undone alone: when it fails, whoever opened the transaction
 * fails with it and everything rolls back (a step's journal rows inside the tool call's audit transaction).
 */
export function partOfTransaction<T>(db: Db, work: () => T): T {
  return db.inTransaction ? work() : atomic(db, work);
}
