import { describe, expect, it } from "vitest";
import { queryTerms } from "../../src/memory/fts-query.js";
import { KeywordSearch } from "../../src/memory/keyword-search.js";
import { MemoryRepository } from "../../src/memory/memory-repository.js";
import { Store } from "../../src/store/index.js";

describe("keyword search cost bounds", () => {
  const store = Store.open(":memory:");
  const repository = new MemoryRepository(store.db);
  store.db.transaction(() => {
    for (let i = 0; i < 2500; i++) {
      const extra = i === 10 ? " The zebra firmware fixed it." : "";
      repository.upsert(
        {
          agent: "main",
          key: `r.${i}`,
          content: `The router rebooted overnight, entry ${i}.${extra}`,
          category: "daily",
          audience: "owners",
        },
        1_000 + i,
      );
    }
    repository.upsert(
      {
        agent: "other",
        key: "o",
        content: "zebra router for another agent",
        category: "core",
        audience: "owners",
      },
      1,
    );
  })();
  const search = new KeywordSearch(store.db);
  const keys = (hits: Array<{ id: number }>) =>
    [...repository.getMany(hits.map((hit) => hit.id)).values()].map((m) => m.key);

  it("ranks by the selective term when another term is in too many memories", () => {
    const hits = search.search("main", queryTerms("router zebra"), 5);
    expect(keys(hits.slice(0, 1))).toEqual(["r.10"]);
    expect(hits).toHaveLength(1); // "router" alone selects nothing: it is in every memory
  });

  it("returns the newest matches when every term is common", () => {
    const hits = search.search("main", queryTerms("router rebooted"), 3);
    expect(hits.map((hit) => repository.getMany([hit.id]).get(hit.id)!.key)).toEqual([
      "r.2499",
      "r.2498",
      "r.2497",
    ]);
  });

  it("returns nothing for terms that occur nowhere, and keeps agents apart", () => {
    expect(search.search("main", queryTerms("forgotten words"), 5)).toEqual([]);
    expect(keys(search.search("other", queryTerms("zebra"), 5))).toEqual(["o"]);
  });
});
