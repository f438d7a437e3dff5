import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { atomic, partOfTransaction } from "../../src/store/atomic.js";

/**
 * `atomic` (one better-sqlite3 transaction function per database, handed the work) must behave as
 * `db.transaction(work)()`; `partOfTransaction` joins a transaction already open without a savepoint.
 */
function db() {
  const database = new Database(":memory:");
  database.exec("CREATE TABLE t (v TEXT)");
  const insert = database.prepare("INSERT INTO t (v) VALUES (?)");
  const rows = () => database.prepare("SELECT v FROM t ORDER BY rowid").pluck().all();
  return { database, insert, rows };
}

describe("atomic and partOfTransaction", () => {
  it("atomic commits the work and returns its value; a throw rolls all of it back", () => {
    const { database, insert, rows } = db();
    expect(
      atomic(database, () => {
        insert.run("a");
        return 7;
      }),
    ).toBe(7);
    expect(() =>
      atomic(database, () => {
        insert.run("b");
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(rows()).toEqual(["a"]);
    expect(database.inTransaction).toBe(false);
  });

  it("nested atomic is a savepoint, as db.transaction's: a caught failure inside keeps the outer writes", () => {
    const { database, insert, rows } = db();
    atomic(database, () => {
      insert.run("outer");
      try {
        atomic(database, () => {
          insert.run("inner");
          throw new Error("inner fails");
        });
      } catch {
        // the inner work alone is undone
      }
      insert.run("after");
    });
    expect(rows()).toEqual(["outer", "after"]);
  });

  it("partOfTransaction joins the open transaction: its failure undoes the whole of it", () => {
    const { database, insert, rows } = db();
    expect(() =>
      atomic(database, () => {
        insert.run("audit row");
        partOfTransaction(database, () => {
          insert.run("journal row");
          throw new Error("journal write failed");
        });
      }),
    ).toThrow("journal write failed");
    expect(rows()).toEqual([]);
    // With none open, it is a transaction of its own.
    expect(() =>
      partOfTransaction(database, () => {
        insert.run("alone");
        throw new Error("no");
      }),
    ).toThrow("no");
    partOfTransaction(database, () => insert.run("kept"));
    expect(rows()).toEqual(["kept"]);
  });

  it("partOfTransaction has no savepoint: its failure is never undone alone, only with the whole transaction", () => {
    const { database, insert, rows } = db();
    atomic(database, () => {
      try {
        partOfTransaction(database, () => {
          insert.run("half-written");
          throw new Error("caught by a caller that shouldn't");
        });
      } catch {
        // A caller that catches keeps the half-done part: so the journal's callers never catch it.
      }
    });
    expect(rows()).toEqual(["half-written"]);
  });

  it("one transaction function per database: two databases don't share it", () => {
    const first = db();
    const second = db();
    atomic(first.database, () => first.insert.run("1"));
    atomic(second.database, () => second.insert.run("2"));
    expect(first.rows()).toEqual(["1"]);
    expect(second.rows()).toEqual(["2"]);
  });
});
