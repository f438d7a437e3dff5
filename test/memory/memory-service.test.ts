import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log/logger.js";
import { MemoryService } from "../../src/memory/memory-service.js";
import { Store } from "../../src/store/index.js";
import { hashEmbedding, type OpenAiFake, startOpenAiFake } from "../fakes/openai.js";
import { capturingLogger, openMemory, tempDir, testConfig } from "./helpers.js";

const DAY = 86_400_000;

describe("memory store, keyword only", () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    temp = tempDir();
  });
  afterEach(() => temp.cleanup());

  it("stores, recalls and forgets, removing index rows too", async () => {
    const { store, memory } = openMemory(testConfig(temp.dir), silentLogger());
    const first = await memory.store({
      agent: "main",
      role: "owner",
      key: "owner.timezone",
      content: "The owner lives in Lisbon (Europe/Lisbon).",
    });
    expect(first).toMatchObject({ created: true, indexed: "keyword" });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "nas.backup",
      content: "The NAS backs up every night at 02:00 to the USB disk.",
      category: "daily",
    });
    await memory.store({
      agent: "other",
      role: "owner",
      key: "owner.timezone",
      content: "Other agent: Lisbon too.",
    });

    const recall = await memory.recall({
      agent: "main",
      role: "owner",
      query: "where does the owner live? Lisbon",
    });
    expect(recall.mode).toBe("keyword");
    expect(recall.hits.map((hit) => hit.memory.key)).toEqual(["owner.timezone"]);
    expect(recall.hits[0]!.matchedBy).toEqual(["keyword"]);
    expect(recall.hits[0]!.why).toContain("keyword rank 1");
    expect(recall.hits[0]!.score).toBeGreaterThan(0);
    expect(memory.get("main", "owner.timezone")!.accessCount).toBe(1);

    const updated = await memory.store({
      agent: "main",
      role: "owner",
      key: "owner.timezone",
      content: "The owner moved to Porto.",
    });
    expect(updated.created).toBe(false);
    expect((await memory.recall({ agent: "main", role: "owner", query: "Lisbon" })).hits).toEqual([]);
    expect((await memory.recall({ agent: "main", role: "owner", query: "Porto" })).hits[0]!.memory.key).toBe(
      "owner.timezone",
    );

    expect(memory.forget("main", "owner.timezone", "owner")?.key).toBe("owner.timezone");
    expect(memory.forget("main", "owner.timezone", "owner")).toBeUndefined();
    expect((await memory.recall({ agent: "main", role: "owner", query: "Porto" })).hits).toEqual([]);
    const ftsRows = store.db
      .prepare("SELECT COUNT(*) AS n FROM memories_fts WHERE memories_fts MATCH 'porto'")
      .get() as { n: number };
    expect(ftsRows.n).toBe(0);
    // The other agent's memory is untouched.
    expect(memory.get("other", "owner.timezone")).toBeDefined();
    await memory.close();
    store.close();
  });

  it("keeps memories across a restart on the same database", async () => {
    const config = testConfig(temp.dir);
    const first = openMemory(config, silentLogger());
    await first.memory.store({
      agent: "main",
      role: "owner",
      key: "pet",
      content: "The owner's cat is called Miso.",
    });
    await first.memory.close();
    first.store.close();

    const second = openMemory(config, silentLogger());
    const recall = await second.memory.recall({ agent: "main", role: "owner", query: "cat name" });
    expect(recall.hits[0]?.memory.content).toBe("The owner's cat is called Miso.");
    await second.memory.close();
    second.store.close();
  });

  it.each([
    ['"unbalanced quote'],
    ["NEAR(owner server"],
    ["owner*"],
    ["-owner"],
    ["(owner OR (server"],
    ["owner) AND NOT ("],
    ["key:owner content:*"],
    ["^server"],
    ['"" OR "'],
    ["***"],
    [""],
    ["AND OR NOT"],
    ['owner\'s "server" - NEAR/2 {x}'],
  ])("FTS syntax in the query %j returns results or nothing, never an error", async (query) => {
    const { store, memory } = openMemory(testConfig(temp.dir), silentLogger());
    await memory.store({
      agent: "main",
      role: "owner",
      key: "server",
      content: "The owner's server is a Raspberry Pi 5 in the hallway.",
    });
    const recall = await memory.recall({ agent: "main", role: "owner", query });
    expect(Array.isArray(recall.hits)).toBe(true);
    if (/server|owner/i.test(query)) expect(recall.hits.length).toBe(1);
    await memory.close();
    store.close();
  });

  it("boosts core memories and decays old daily ones", async () => {
    const store = Store.open(":memory:");
    let now = Date.UTC(2026, 0, 1);
    const memory = new MemoryService({
      db: store.db,
      embedder: null,
      logger: silentLogger(),
      clock: { now: () => now },
    });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "daily.old",
      content: "router firmware updated",
      category: "daily",
    });
    now += 60 * DAY;
    await memory.store({
      agent: "main",
      role: "owner",
      key: "daily.new",
      content: "router firmware updated",
      category: "daily",
    });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "core.router",
      content: "router firmware updated",
      category: "core",
    });
    const hits = (await memory.recall({ agent: "main", role: "owner", query: "router firmware" })).hits;
    expect(hits.map((hit) => hit.memory.key)).toEqual(["core.router", "daily.new", "daily.old"]);
    expect(hits[2]!.why).toMatch(/recency ×0\.5\d \(60 d old\)/);
    await memory.close();
    store.close();
  });
});

describe("memory store with embeddings (OpenAI fake over HTTP)", () => {
  let temp: ReturnType<typeof tempDir>;
  let fake: OpenAiFake;
  beforeEach(async () => {
    temp = tempDir();
    fake = await startOpenAiFake();
  });
  afterEach(async () => {
    await fake.close();
    temp.cleanup();
  });

  const embeddingConfig = () =>
    testConfig(temp.dir, {
      llm: { baseUrl: fake.url, apiKey: "sk-test", embeddingModel: "embed-small", maxRetries: 0 },
    });

  it("ranks a semantically near memory first even without shared keywords", async () => {
    // Crafted embedding space: "laptop" and "notebook computer" point the same way, "lunch" elsewhere;
    // "owner" carries no meaning of its own, so the lunch memory shares only a keyword with the query.
    const axes: Record<string, number> = { laptop: 0, notebook: 0, computer: 0, lunch: 1, sandwich: 1 };
    fake.embed = (text) => {
      const vector = new Array<number>(8).fill(0.01);
      for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
        const axis = axes[word];
        if (axis !== undefined) vector[axis]! += 1;
      }
      return vector;
    };
    const { store, memory } = openMemory(embeddingConfig(), silentLogger());
    await memory.store({
      agent: "main",
      role: "owner",
      key: "lunch",
      content: "The owner eats a sandwich for lunch.",
    });
    const stored = await memory.store({
      agent: "main",
      role: "owner",
      key: "device",
      content: "Work is done on a notebook computer.",
    });
    expect(stored.indexed).toBe("keyword+vector");

    const recall = await memory.recall({
      agent: "main",
      role: "owner",
      query: "which laptop does the owner use",
    });
    expect(recall.mode).toBe("hybrid");
    expect(recall.hits[0]!.memory.key).toBe("device");
    expect(recall.hits[0]!.matchedBy).toContain("vector");
    expect(recall.hits[0]!.why).toMatch(/semantic rank 1 \(cosine (0\.9\d|1\.00)\)/);
    // Keyword search alone would have put the lunch memory first (it is the only one sharing a word).
    expect(recall.hits.map((hit) => hit.memory.key)).toEqual(["device", "lunch"]);
    expect(recall.hits[1]!.matchedBy).toEqual(["keyword"]);
    expect(fake.embeddingRequests.at(-1)).toEqual({
      model: "embed-small",
      input: ["which laptop does the owner use"],
    });
    await memory.close();
    store.close();
  });

  it("never re-embeds unchanged text (content hash), and reuses a vector for identical text", async () => {
    const { store, memory } = openMemory(embeddingConfig(), silentLogger());
    await memory.store({
      agent: "main",
      role: "owner",
      key: "a",
      content: "The garage door code is stored in the vault.",
    });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "a",
      content: "The garage door code is stored in the vault.",
    });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "b",
      content: "The garage door code is stored in the vault.",
    });
    expect(fake.embeddingRequests).toHaveLength(1);
    await memory.store({ agent: "main", role: "owner", key: "a", content: "The garage door code changed." });
    expect(fake.embeddingRequests).toHaveLength(2);
    await memory.close();
    store.close();
  });

  it("embeds bulk stores in batches", async () => {
    const { store, memory } = openMemory(embeddingConfig(), silentLogger());
    const items = Array.from({ length: 100 }, (_, i) => ({
      agent: "main",
      key: `sensor.${i}`,
      content: `Sensor ${i} sits in room ${i % 7}.`,
    }));
    expect(await memory.storeMany(items)).toEqual({ stored: 100, indexed: "keyword+vector" });
    expect(fake.embeddingRequests.map((request) => request.input.length)).toEqual([64, 36]);
    expect(store.db.prepare("SELECT COUNT(*) FROM memory_vectors").pluck().get()).toBe(100);
    const hits = (await memory.recall({ agent: "main", role: "owner", query: "sensor 42", limit: 1 })).hits;
    expect(hits[0]!.memory.key).toBe("sensor.42");
    await memory.close();
    store.close();
  });

  it("falls back to keyword search with a logged warning when the endpoint is down, then backfills", async () => {
    const { logger, lines } = capturingLogger();
    const { store, memory } = openMemory(embeddingConfig(), logger);
    fake.embeddingStatus = 503;
    const stored = await memory.store({
      agent: "main",
      role: "owner",
      key: "wifi",
      content: "The guest wifi is called Magpie-Guest.",
    });
    expect(stored.indexed).toBe("keyword");
    const recall = await memory.recall({ agent: "main", role: "owner", query: "guest wifi name" });
    expect(recall.mode).toBe("keyword");
    expect(recall.fallbackReason).toBeDefined();
    expect(recall.hits[0]!.memory.key).toBe("wifi");
    expect(lines.some((line) => line.level === 40 && line.code === "memory.embedding_failed")).toBe(true);

    // The endpoint is back: the next successful call starts embedding what was missed.
    fake.embeddingStatus = null;
    expect((await memory.recall({ agent: "main", role: "owner", query: "guest wifi name" })).mode).toBe(
      "hybrid",
    );
    await memory.idle();
    expect(memory.repository.vectorMeta(memory.get("main", "wifi")!.id)).toMatchObject({
      model: "embed-small",
      dimensions: 384,
    });
    expect((await memory.recall({ agent: "main", role: "owner", query: "guest wifi name" })).mode).toBe(
      "hybrid",
    );
    await memory.close();
    store.close();
  });

  it("falls back when nothing listens at the embeddings URL", async () => {
    const { logger, lines } = capturingLogger();
    const url = fake.url;
    await fake.close();
    const config = testConfig(temp.dir, {
      llm: { baseUrl: url, embeddingModel: "embed-small", maxRetries: 0 },
    });
    const { store, memory } = openMemory(config, logger);
    await memory.store({
      agent: "main",
      role: "owner",
      key: "k",
      content: "Solar panels produce 4 kW at noon.",
    });
    const recall = await memory.recall({ agent: "main", role: "owner", query: "solar panels" });
    expect(recall).toMatchObject({ mode: "keyword" });
    expect(recall.hits).toHaveLength(1);
    expect(lines.filter((line) => line.code === "memory.embedding_failed").length).toBeGreaterThanOrEqual(2);
    await memory.close();
    store.close();
    fake = await startOpenAiFake();
  });

  it("re-embeds in the background when the model's dimensions change, without failing recall", async () => {
    const { logger, lines } = capturingLogger();
    const config = embeddingConfig();
    const first = openMemory(config, logger);
    await first.memory.store({
      agent: "main",
      role: "owner",
      key: "boiler",
      content: "The boiler is serviced every October.",
    });
    await first.memory.store({
      agent: "main",
      role: "owner",
      key: "car",
      content: "The car is a blue hatchback.",
    });
    await first.memory.close();
    first.store.close();

    // Same model name, new dimension count (e.g. a different model pulled under the same tag).
    fake.embed = (text) => hashEmbedding(text, 256);
    const second = openMemory(config, logger);
    const recall = await second.memory.recall({
      agent: "main",
      role: "owner",
      query: "boiler serviced in October",
    });
    expect(recall.hits[0]!.memory.key).toBe("boiler");
    await second.memory.idle();
    const dimensions = second.store.db
      .prepare("SELECT DISTINCT dimensions FROM memory_vectors")
      .pluck()
      .all();
    expect(dimensions).toEqual([256]);
    const after = await second.memory.recall({
      agent: "main",
      role: "owner",
      query: "boiler serviced in October",
    });
    expect(after.mode).toBe("hybrid");
    expect(after.hits[0]!.matchedBy).toEqual(["keyword", "vector"]);
    expect(lines.some((line) => line.code === "memory.dimensions_changed")).toBe(false); // first answer of this process
    await second.memory.close();
    second.store.close();
  });

  it("re-embeds everything when the embedding model changes", async () => {
    const first = openMemory(embeddingConfig(), silentLogger());
    await first.memory.store({
      agent: "main",
      role: "owner",
      key: "plant",
      content: "Water the basil on Sundays.",
    });
    await first.memory.close();
    first.store.close();
    const config = testConfig(temp.dir, {
      llm: { baseUrl: fake.url, embeddingModel: "embed-large", maxRetries: 0 },
    });
    const second = openMemory(config, silentLogger());
    second.memory.startBackgroundIndexing();
    await second.memory.idle();
    expect(second.store.db.prepare("SELECT model FROM memory_vectors").pluck().all()).toEqual([
      "embed-large",
    ]);
    await second.memory.close();
    second.store.close();
  });
});
