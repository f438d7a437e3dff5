/**
 * Memory benchmark: inserts 10,000 and 100,000 synthetic memories (sentences from a small grammar, 384-dim
 * vectors from a deterministic in-process fake embedder) into a real SQLite file, then measures recall
 * latency for keyword-only and hybrid search, plus an exact packed-Float32 scan for comparison, and how many of
 * the exact top-10 neighbours the sign-code shortlist finds.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { silentLogger } from "../src/log/logger.js";
import type { Embedder } from "../src/memory/embedder.js";
import { MemoryService, RESCORE_CANDIDATES } from "../src/memory/memory-service.js";
import { PRESELECT_FACTOR } from "../src/memory/vector-index.js";
import { dot, normalize } from "../src/memory/vector-math.js";
import { Store } from "../src/store/index.js";

const DIMENSIONS = 384;
const QUERIES = 200;
const SIZES = [10_000, 100_000];

/** Bag of hashed words → unit vector: sentences sharing words are near, like a (very) small real model. */
export class FakeEmbedder implements Embedder {
  readonly model = "bench-fake-384";
  private readonly wordVectors = new Map<string, Float32Array>();

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text));
  }

  embedOne(text: string): Float32Array {
    const sum = new Float32Array(DIMENSIONS);
    for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
      const vector = this.wordVector(word);
      for (let i = 0; i < DIMENSIONS; i++) sum[i]! += vector[i]!;
    }
    return normalize(sum);
  }

  private wordVector(word: string): Float32Array {
    let vector = this.wordVectors.get(word);
    if (!vector) {
      vector = new Float32Array(DIMENSIONS);
      let seed = createHash("sha256").update(word).digest().readUInt32LE(0);
      for (let i = 0; i < DIMENSIONS; i++) {
        seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
        vector[i] = seed / 2 ** 32 - 0.5;
      }
      this.wordVectors.set(word, vector);
    }
    return vector;
  }
}

/** Deterministic pseudo-random numbers (mulberry32). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SUBJECTS = [
  "The owner",
  "My sister",
  "The NAS",
  "The home server",
  "Anna",
  "The kids",
  "The Raspberry Pi",
  "Our landlord",
  "The dentist",
  "The car",
  "The garden sensor",
  "The router",
  "Grandma",
  "The team lead",
  "The cat",
];
const VERBS = [
  "prefers",
  "needs",
  "reported",
  "scheduled",
  "forgot",
  "asked about",
  "fixed",
  "ordered",
  "cancelled",
  "moved",
  "backed up",
  "paid for",
  "booked",
  "mentioned",
  "updated",
];
const OBJECTS = [
  "the quarterly tax return",
  "a new SSD for the backup pool",
  "oat milk instead of dairy",
  "the train to Porto",
  "the firmware of the mesh router",
  "a vet appointment for the cat",
  "the solar inverter readings",
  "dark mode in every app",
  "the photo archive to the cold storage disk",
  "tickets for the jazz concert",
  "the monthly electricity bill",
  "a birthday present for Tom",
  "the VPN certificate renewal",
  "the espresso machine descaling",
  "the kitchen smoke detector battery",
  "metric units and 24-hour time",
  "the Kubernetes upgrade",
  "a standing desk",
  "the Spanish lessons",
  "the insurance claim for the bike",
];
const WHEN = [
  "on Monday",
  "every Sunday morning",
  "next week",
  "before the holidays",
  "at 02:00",
  "after lunch",
  "in March",
  "last night",
  "twice a month",
  "when it rains",
  "at the end of the quarter",
  "tomorrow",
];
const WHERE = [
  "at home",
  "in the office",
  "in Lisbon",
  "at the cabin",
  "in the garage",
  "on the balcony",
  "at the gym",
  "downtown",
  "in the basement",
  "at the co-working space",
];

const SYLLABLES = [
  "ka",
  "lo",
  "mi",
  "ren",
  "to",
  "vas",
  "qui",
  "dor",
  "bel",
  "tra",
  "no",
  "zen",
  "pra",
  "ul",
  "fi",
  "gor",
  "sa",
  "ve",
];

/** Proper names (people, products, places): a long-tailed vocabulary like real notes have. */
const NAMES = Array.from({ length: 4000 }, (_, index) => {
  let name = "";
  for (let n = index + SYLLABLES.length; n > 0; n = Math.floor(n / SYLLABLES.length)) {
    name += SYLLABLES[n % SYLLABLES.length];
  }
  return name[0]!.toUpperCase() + name.slice(1);
});

/** Zipf-distributed pick: the first names are frequent, most are rare. */
function zipf(next: () => number, size: number): number {
  // Inverse CDF of a continuous 1/x distribution over [1, size].
  return Math.min(size - 1, Math.floor(Math.exp(next() * Math.log(size))) - 1);
}

export function sentence(next: () => number, index: number): string {
  const pick = <T>(list: T[]): T => list[Math.floor(next() * list.length)]!;
  const name = NAMES[zipf(next, NAMES.length)]!;
  const other = NAMES[zipf(next, NAMES.length)]!;
  return `${pick(SUBJECTS)} ${pick(VERBS)} ${pick(OBJECTS)} ${pick(WHEN)} ${pick(WHERE)}, with ${name} and ${other} (ticket ${index}).`;
}

/** Half the queries name something specific (a name from the same long tail), half use only everyday words. */
export function queryText(next: () => number): string {
  const pick = <T>(list: T[]): T => list[Math.floor(next() * list.length)]!;
  const object = pick(OBJECTS).replace(/^(the|a|an) /, "");
  if (next() < 0.5) return `what did ${NAMES[zipf(next, NAMES.length)]} say about ${object}`;
  return next() < 0.5
    ? `what about ${object} ${pick(WHERE)}`
    : `when did ${pick(SUBJECTS).toLowerCase()} ${pick(VERBS)} ${object}`;
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

interface Latency {
  p50: number;
  p95: number;
  /** CPU time of this process per query: what the query costs when the machine is busy with others. */
  cpuP50: number;
  cpuP95: number;
}

async function time(queries: string[], run: (query: string) => Promise<unknown> | unknown): Promise<Latency> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (const query of queries) {
    const cpuStarted = process.cpuUsage();
    const started = performance.now();
    await run(query);
    wall.push(performance.now() - started);
    const used = process.cpuUsage(cpuStarted);
    cpu.push((used.user + used.system) / 1000);
  }
  wall.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return {
    p50: percentile(wall, 0.5),
    p95: percentile(wall, 0.95),
    cpuP50: percentile(cpu, 0.5),
    cpuP95: percentile(cpu, 0.95),
  };
}

interface Row {
  size: number;
  singlePerSecond: number;
  bulkPerSecond: number;
  dbMb: number;
  indexBuildMs: number;
  /** Heap growth per memory across the index build (bench runs with --expose-gc; NaN without it). */
  indexBytesPerVector: number;
  keyword: Latency;
  hybrid: Latency;
  exact: Latency;
  overlap: number;
  similarityRatio: number;
}

/** Memories stored one `store()` call at a time (the tool path); the rest go through `storeMany`. */
const ONE_BY_ONE = 2_000;
const BULK_CHUNK = 5_000;

async function benchSize(size: number): Promise<Row> {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-bench-memory-"));
  try {
    const store = Store.open(dir);
    const embedder = new FakeEmbedder();
    const hybrid = new MemoryService({ db: store.db, embedder, logger: silentLogger() });
    const keywordOnly = new MemoryService({ db: store.db, embedder: null, logger: silentLogger() });
    const next = random(42);
    const categories = ["core", "daily", "conversation"] as const;

    const memory = (i: number) => ({
      agent: "main",
      key: `bench.${i}`,
      content: sentence(next, i),
      category: categories[i % 3],
    });
    const singleStarted = performance.now();
    for (let i = 0; i < ONE_BY_ONE; i++) await hybrid.store({ ...memory(i), role: "owner" });
    const singlePerSecond = ONE_BY_ONE / ((performance.now() - singleStarted) / 1000);
    const bulkStarted = performance.now();
    for (let start = ONE_BY_ONE; start < size; start += BULK_CHUNK) {
      const chunk = Array.from({ length: Math.min(BULK_CHUNK, size - start) }, (_, offset) =>
        memory(start + offset),
      );
      await hybrid.storeMany(chunk);
    }
    const bulkPerSecond =
      size > ONE_BY_ONE ? (size - ONE_BY_ONE) / ((performance.now() - bulkStarted) / 1000) : 0;
    await hybrid.idle();
    store.db.pragma("wal_checkpoint(TRUNCATE)");
    const dbMb =
      (
        store.db
          .prepare("SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()")
          .get() as { bytes: number }
      ).bytes / 1e6;

    const queryRandom = random(7);
    const queries = Array.from({ length: QUERIES }, () => queryText(queryRandom));

    // The first vector search builds the in-memory sign-code index from SQLite.
    const heapBefore = await settledHeap();
    const buildStarted = performance.now();
    await hybrid.recall({ agent: "main", role: "owner", query: "warm up the index", touch: false });
    const indexBuildMs = performance.now() - buildStarted;
    const indexBytesPerVector = ((await settledHeap()) - heapBefore) / size;

    const keyword = await time(queries, (query) =>
      keywordOnly.recall({ agent: "main", role: "owner", query, limit: 5 }),
    );
    const hybridTimes = await time(queries, (query) =>
      hybrid.recall({ agent: "main", role: "owner", query, limit: 5 }),
    );

    // Exact brute force over a packed Float32Array, for comparison with the sign-code shortlist.
    const ids = new Int32Array(size);
    const packed = new Float32Array(size * DIMENSIONS);
    let count = 0;
    for (const { memoryId, vector } of hybrid.repository.agentVectors("main", embedder.model, DIMENSIONS)) {
      ids[count] = memoryId;
      packed.set(vector, count * DIMENSIONS);
      count++;
    }
    const exactTop = (query: string, k: number): Array<{ id: number; score: number }> => {
      const vector = embedder.embedOne(query);
      // Top-k by insertion into a small sorted list: no full sort.
      const best: Array<{ slot: number; score: number }> = [];
      for (let slot = 0; slot < count; slot++) {
        const score = dot(vector, packed, slot * DIMENSIONS);
        if (best.length === k && score <= best[k - 1]!.score) continue;
        let position = best.length;
        while (position > 0 && best[position - 1]!.score < score) position--;
        best.splice(position, 0, { slot, score });
        if (best.length > k) best.pop();
      }
      return best.map((entry) => ({ id: ids[entry.slot]!, score: entry.score }));
    };
    const exact = await time(queries, (query) => exactTop(query, 20));

    // How many of the exact top-10 vector neighbours the sign-code shortlist + exact rescoring also finds
    // (recall@10), and how close its top-10 cosines come to the exact ones (misses among near-ties cost
    // almost nothing).
    let found = 0;
    let wanted = 0;
    let approximateSum = 0;
    let exactSum = 0;
    for (const query of queries) {
      const truth = exactTop(query, 10);
      const approximate = await hybrid.nearest("main", query, 10);
      const approximateIds = new Set(approximate.map((hit) => hit.id));
      for (const { id } of truth) if (approximateIds.has(id)) found++;
      wanted += truth.length;
      exactSum += truth.reduce((sum, hit) => sum + hit.score, 0);
      approximateSum += approximate.reduce((sum, hit) => sum + hit.similarity, 0);
    }

    await hybrid.close();
    store.close();
    return {
      size,
      singlePerSecond,
      bulkPerSecond,
      dbMb,
      indexBuildMs,
      indexBytesPerVector,
      keyword,
      hybrid: hybridTimes,
      exact,
      overlap: wanted > 0 ? found / wanted : 0,
      similarityRatio: exactSum > 0 ? approximateSum / exactSum : 0,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ms = (value: number): string => `${value.toFixed(2)} ms`;

/** Heap in use (JS objects and typed arrays) once garbage is collected; NaN without --expose-gc. */
async function settledHeap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return Number.NaN;
  // Typed-array memory is released after the collection: give it a turn, then collect again.
  for (let round = 0; round < 3; round++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

export async function run(): Promise<void> {
  const sizes = process.env.MEMORY_BENCH_SIZES
    ? process.env.MEMORY_BENCH_SIZES.split(",").map(Number)
    : SIZES;
  const rows: Row[] = [];
  for (const size of sizes) rows.push(await benchSize(size));
  console.log(
    `${QUERIES} queries per mode (half name something specific, half use only everyday words), limit 5; ` +
      `vectors ${DIMENSIONS}-dim from a deterministic fake embedder (in-process). Load average at start: ` +
      `${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} CPUs.\n`,
  );
  const count = (value: number): string => Math.round(value).toLocaleString("en-US");
  console.log(
    "| memories | store() one by one | storeMany (bulk) | DB size | index build (first vector search) | index memory per vector | vector recall@10 vs exact | top-10 cosine vs exact |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of rows) {
    console.log(
      `| ${count(row.size)} | ${count(row.singlePerSecond)}/s | ${row.bulkPerSecond > 0 ? `${count(row.bulkPerSecond)}/s` : "—"} | ${row.dbMb.toFixed(0)} MB | ${ms(row.indexBuildMs)} | ${Number.isNaN(row.indexBytesPerVector) ? "—" : `${count(row.indexBytesPerVector)} B`} | ${(row.overlap * 100).toFixed(1)}% | ${(row.similarityRatio * 100).toFixed(1)}% |`,
    );
  }
  console.log("\n| memories | recall | wall p50 | wall p95 | CPU p50 | CPU p95 |");
  console.log("|---:|---|---:|---:|---:|---:|");
  for (const row of rows) {
    for (const [mode, latency] of [
      ["keyword only", row.keyword],
      ["hybrid (keyword + vector)", row.hybrid],
      ["exact packed Float32 scan (vector part only)", row.exact],
    ] as const) {
      console.log(
        `| ${count(row.size)} | ${mode} | ${ms(latency.p50)} | ${ms(latency.p95)} | ${ms(latency.cpuP50)} | ${ms(latency.cpuP95)} |`,
      );
    }
  }
  console.log(
    "\nhybrid = FTS5 BM25 + vector search, fused by RRF, access recorded. Vector search: in-memory sign codes " +
      "(1 bit per dimension) scored against the full-precision query (sign disagreements weighted by the " +
      `query's |value|), the first 128 dimensions pre-selecting ${count(RESCORE_CANDIDATES * PRESELECT_FACTOR)} ` +
      `codes, the full code keeping ${RESCORE_CANDIDATES}, rescored with exact cosine from SQLite. ` +
      "exact packed scan = cosine over every vector in one Float32Array (vector part only, no keyword, no SQLite). " +
      `recall@10 = share of the exact top-10 neighbours the vector search finds (${QUERIES} queries); ` +
      "index memory = heap growth across the index build, per memory.",
  );
}
