import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Statement } from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { queryTerms } from "../../src/memory/fts-query.js";
import { KeywordSearch } from "../../src/memory/keyword-search.js";
import { MemoryRepository } from "../../src/memory/memory-repository.js";
import { Store } from "../../src/store/index.js";

/**
 * Issue 35, cost on the hot path: every turn recalls, and probing each word's document frequency (up to its share of
 * the posting budget) was most of a recall's cost. The frequencies are kept while the full-text index is unchanged
 * — and a memory written in between, by this connection or another process, is found by the very next search.
 */
const opened: Store[] = [];
afterEach(() => {
  for (const store of opened.splice(0)) store.close();
});

const PROBE = "SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)";

/** A store of 1,200 memories that all say "router", and a search whose frequency probes are counted. */
function setUp() {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "magpie-keyword-frequencies-")), "magpie.db");
  const store = Store.open(file);
  opened.push(store);
  const repository = new MemoryRepository(store.db);
  store.db.transaction(() => {
    for (let i = 0; i < 1200; i++)
      repository.upsert(
        {
          agent: "main",
          key: `r.${i}`,
          content: `The router rebooted, entry ${i}.`,
          category: "daily",
          audience: "owners",
        },
        1_000 + i,
      );
  })();
  const probes: string[] = [];
  // The same connection, with the probe statement counted.
  const counted = new Proxy(store.db, {
    get(target, property, receiver) {
      if (property !== "prepare") return Reflect.get(target, property, receiver);
      return (sql: string) => {
        const statement = target.prepare(sql);
        if (sql !== PROBE) return statement;
        return new Proxy(statement, {
          get(inner, name, proxy) {
            if (name === "get")
              return (...args: unknown[]) => {
                probes.push(String(args[0]));
                return (inner.get as (...values: unknown[]) => unknown)(...args);
              };
            if (name === "pluck")
              return (toggle?: boolean) => {
                inner.pluck(toggle ?? true);
                return proxy;
              };
            const value = Reflect.get(inner, name, inner);
            return typeof value === "function" ? value.bind(inner) : value;
          },
        });
      };
    },
  });
  const search = new KeywordSearch(counted);
  const keys = (hits: Array<{ id: number }>) =>
    [...repository.getMany(hits.map((hit) => hit.id)).values()].map((memory) => memory.key).sort();
  return { store, file, repository, search, probes, keys };
}

describe("keyword recall keeps term frequencies while the index is unchanged", () => {
  it("ATTACK: a second search of the same words with nothing written in between probes no frequency again", () => {
    const { search, probes, keys } = setUp();
    const first = search.search("main", queryTerms("router zebra rebooted"), 5);
    expect(probes).toHaveLength(3);
    const second = search.search("main", queryTerms("router zebra rebooted"), 5);
    expect(probes).toHaveLength(3);
    expect(keys(second)).toEqual(keys(first));
    // Fewer terms, a larger share per term: "router" (in all 1,200) was probed to 667 rows at most, 1,001 now.
    search.search("main", queryTerms("router zebra"), 5);
    expect(probes.slice(3)).toEqual(['"router"']);
  });

  it("a memory stored after a search is found by the next one (the same words)", () => {
    const { repository, search, keys } = setUp();
    expect(keys(search.search("main", queryTerms("router zebra"), 5))).not.toContain("zebra");
    repository.upsert(
      {
        agent: "main",
        key: "zebra",
        content: "The zebra firmware fixed the router.",
        category: "core",
        audience: "owners",
      },
      9_000,
    );
    expect(keys(search.search("main", queryTerms("router zebra"), 5))).toEqual(["zebra"]);
    repository.delete("main", "zebra");
    expect(keys(search.search("main", queryTerms("router zebra"), 5))).not.toContain("zebra");
  });

  it("a memory written by another process after a search is found by the next one", () => {
    const { file, search, keys } = setUp();
    expect(keys(search.search("main", queryTerms("router zebra"), 5))).not.toContain("zebra");
    const other = Store.open(file);
    new MemoryRepository(other.db).upsert(
      {
        agent: "main",
        key: "zebra",
        content: "zebra notes from the CLI",
        category: "core",
        audience: "owners",
      },
      9_000,
    );
    other.close();
    expect(keys(search.search("main", queryTerms("router zebra"), 5))).toEqual(["zebra"]);
  });

  it("inside an open transaction a search probes afresh (a pending write is not in the index's structure yet)", () => {
    const { store, repository, search, keys, probes } = setUp();
    search.search("main", queryTerms("router zebra"), 5);
    const before = probes.length;
    store.db.transaction(() => {
      repository.upsert(
        {
          agent: "main",
          key: "zebra",
          content: "zebra in a transaction",
          category: "core",
          audience: "owners",
        },
        9_000,
      );
      expect(keys(search.search("main", queryTerms("router zebra"), 5))).toEqual(["zebra"]);
    })();
    expect(probes.length).toBe(before + 2);
  });
});
