import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { quoteTerm } from "../../src/memory/fts-query.js";
import { KeywordSearch } from "../../src/memory/keyword-search.js";
import { MemoryRepository } from "../../src/memory/memory-repository.js";
import { Store } from "../../src/store/index.js";

/**
 * Issue 35, hot path: a search ranks by each selective term's BM25 contribution per memory, kept while the full-text
 * index is unchanged, instead of scoring every posting of every term again. FTS5's bm25() of an OR query is the sum
 * of its terms' own scores: the kept ranking must be exactly the SQL's — same memories, same order, same scores —
 * and a memory written in between (here or by another process) must be ranked at the very next search.
 */
const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** Deterministic words: a small vocabulary, so terms share memories; every memory a different length (no ties). */
function corpus(count: number): string[] {
  const words = [
    "kettle",
    "boiler",
    "parcel",
    "fence",
    "ferry",
    "receipt",
    "modem",
    "doorbell",
    "dentist",
    "rain",
  ];
  let seed = 7;
  const next = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed;
  };
  return Array.from({ length: count }, (_, index) =>
    Array.from({ length: index + 3 }, () => words[next() % words.length]).join(" "),
  );
}

function setUp() {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-keyword-kept-"));
  const store = Store.open(dir);
  const file = path.join(dir, "magpie.db");
  const repository = new MemoryRepository(store.db);
  const other = new Database(file);
  closers.push(
    () => other.close(),
    () => store.close(),
  );
  store.db.transaction(() => {
    for (const [index, content] of corpus(300).entries())
      repository.upsert(
        {
          agent: index % 5 === 0 ? "other" : "main",
          key: `m.${index}`,
          content,
          category: "daily",
          audience: "owners",
        },
        1_000 + index,
      );
  })();
  const search = new KeywordSearch(store.db);
  // The statement the kept ranking stands in for (src/memory/keyword-search.ts `ranked`).
  const ranked = store.db.prepare(
    `SELECT m.id AS id, f.score AS bm25 FROM (
       SELECT rowid, bm25(memories_fts, 2.0, 1.0) AS score FROM memories_fts
       WHERE memories_fts MATCH ? ORDER BY score LIMIT ?
     ) f CROSS JOIN memories m ON m.id = f.rowid
     WHERE m.agent = ? ORDER BY f.score`,
  );
  const bySql = (terms: string[], limit: number, agent = "main") =>
    (
      ranked.all(terms.map(quoteTerm).join(" OR "), limit * 4, agent) as Array<{ id: number; bm25: number }>
    ).slice(0, limit);
  return { store, repository, other, search, bySql };
}

describe("BM25 contributions kept between searches", () => {
  it("ranks exactly as the SQL does (ids, order, scores), first from the index and then from what was kept", () => {
    const { search, bySql } = setUp();
    // Terms in at most their share of the posting budget (selective): ranked by BM25.
    const queries = [["dentist"], ["rain", "doorbell"], ["doorbell", "rain"], ["receipt", "ferry", "fence"]];
    for (const round of [1, 2])
      for (const terms of queries) {
        const kept = search.search("main", terms, 20);
        expect(kept.length, `${terms} round ${round}`).toBeGreaterThan(0);
        expect(kept).toEqual(bySql(terms, 20));
        expect(search.search("other", terms, 5)).toEqual(bySql(terms, 5, "other"));
      }
  });

  it("ATTACK: a memory written after the ranking was kept — here or by another process — is ranked at once", () => {
    const { repository, other, search, bySql } = setUp();
    search.search("main", ["dentist", "rain"], 20);
    // Short, so it ranks first.
    repository.upsert(
      { agent: "main", key: "new.1", content: "dentist rain", category: "daily", audience: "owners" },
      9_000,
    );
    const first = search.search("main", ["dentist", "rain"], 20);
    expect(first).toEqual(bySql(["dentist", "rain"], 20));
    expect(first[0]!.id).toBe(repository.get("main", "new.1")!.id);
    other
      .prepare(
        "INSERT INTO memories (agent, key, content, category, audience, created_at, updated_at) VALUES ('main', 'new.2', 'rain dentist rain dentist', 'daily', 'owners', 1, 1)",
      )
      .run();
    const second = search.search("main", ["dentist", "rain"], 20);
    expect(second).toEqual(bySql(["dentist", "rain"], 20));
    expect(second.map((hit) => hit.id)).toContain(repository.get("main", "new.2")!.id);
    repository.delete("main", "new.2");
    const third = search.search("main", ["dentist", "rain"], 20);
    expect(third).toEqual(bySql(["dentist", "rain"], 20));
    expect(third.map((hit) => hit.id)).not.toContain(second.find((hit) => hit.id > first[0]!.id)?.id);
  });
});
