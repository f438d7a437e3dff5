import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryRepository } from "../../src/memory/memory-repository.js";
import { Store } from "../../src/store/index.js";

/**
 * Issue 35, cost on the hot path: every turn reads the core memories and the recalled ones again; each row is
 * checked and turned into a record once and kept. What is kept must never hide a change.
 */
const opened: Store[] = [];
afterEach(() => {
  for (const store of opened.splice(0)) store.close();
});

function setUp() {
  const store = Store.open(mkdtempSync(path.join(tmpdir(), "magpie-kept-records-")));
  opened.push(store);
  const repository = new MemoryRepository(store.db);
  const store1 = (key: string, content: string) =>
    repository.upsert({ agent: "main", key, content, category: "core", audience: "owners" }, 1_000).record;
  return { store, repository, store1 };
}

describe("memory records kept between reads", () => {
  it("hands out the same frozen record for an unchanged row, core and recalled alike", () => {
    const { repository, store1 } = setUp();
    const { id } = store1("tea", "The owner drinks green tea");
    const [first] = repository.core("main", ["owners"], 50);
    expect(repository.core("main", ["owners"], 50)[0]).toBe(first);
    expect(repository.getMany([id]).get(id)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
  });

  it("ATTACK: a memory's new text, access count or a reused id is read afresh", () => {
    const { store, repository, store1 } = setUp();
    const { id } = store1("tea", "The owner drinks green tea");
    repository.core("main", ["owners"], 50);
    store1("tea", "The owner drinks black tea");
    expect(repository.core("main", ["owners"], 50)[0]!.content).toBe("The owner drinks black tea");
    repository.recordAccess([id], 2_000);
    expect(repository.getMany([id]).get(id)).toMatchObject({ accessCount: 1, lastAccessedAt: 2_000 });
    // Deleted, and its id handed out again (no AUTOINCREMENT) to another memory.
    repository.delete("main", "tea");
    const other = store1("coffee", "The owner never drinks coffee");
    expect(other.id).toBe(id);
    expect(repository.getMany([id]).get(id)).toMatchObject({
      key: "coffee",
      content: "The owner never drinks coffee",
    });
    // Another connection's write (another process: `magpie memory`) is seen too.
    store.db.prepare("UPDATE memories SET content = 'changed elsewhere' WHERE id = ?").run(id);
    expect(repository.core("main", ["owners"], 50)[0]!.content).toBe("changed elsewhere");
  });
});
