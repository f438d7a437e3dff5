import { describe, expect, it } from "vitest";
import { distanceTable, SignCodeIndex } from "../../src/memory/vector-index.js";
import { codeBytes, dot, normalize, writeSignCode } from "../../src/memory/vector-math.js";

function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
}

function randomVectors(count: number, dimensions: number, seed = 1): Float32Array[] {
  const next = generator(seed);
  return Array.from({ length: count }, () => normalize(Array.from({ length: dimensions }, next)));
}

/** The weighted sign distance written out dimension by dimension. */
function weightedDistance(query: Float32Array, vector: Float32Array): number {
  const largest = Math.max(...Array.from(query, Math.abs));
  let distance = 0;
  for (let i = 0; i < query.length; i++) {
    if (query[i]! > 0 !== vector[i]! > 0) distance += Math.round((Math.abs(query[i]!) / largest) * 15);
  }
  return distance;
}

/**
 * Embedding-like vectors: sums of "word" vectors, a few frequent words shared by many items and a rare
 * one or two from a long tail, so they cluster around a common direction as real embeddings do (the case
 * in which plain Hamming distance between sign codes ranks poorly).
 */
function sentenceLikeVectors(
  count: number,
  queryCount: number,
  seed: number,
): { vectors: Float32Array[]; queries: Float32Array[] } {
  const dimensions = 384;
  const next = generator(seed);
  const vocabulary = Array.from({ length: 3000 }, () => Float32Array.from({ length: dimensions }, next));
  const common = 30;
  // Zipf-like: the first rare words are far more frequent than the last.
  const rare = () =>
    common +
    (Math.floor(Math.exp((next() + 0.5) * Math.log(vocabulary.length))) % (vocabulary.length - common));
  const sentence = (words: number) => {
    const sum = new Float32Array(dimensions);
    const picks = [
      ...Array.from({ length: words }, () => Math.floor((next() + 0.5) * common)),
      ...Array.from({ length: Math.max(1, words >> 2) }, rare),
    ];
    for (const word of picks) for (let i = 0; i < dimensions; i++) sum[i]! += vocabulary[word]![i]!;
    return normalize(sum);
  };
  return {
    vectors: Array.from({ length: count }, () => sentence(8)),
    queries: Array.from({ length: queryCount }, () => sentence(3)),
  };
}

function indexOf(vectors: Float32Array[], dimensions: number, capacity?: number): SignCodeIndex {
  const index = new SignCodeIndex(dimensions, capacity);
  vectors.forEach((vector, id) => {
    index.set(id, vector);
  });
  return index;
}

describe("sign codes", () => {
  it("packs one sign bit per dimension, dimension 8b + j in bit j of byte b", () => {
    const vector = Float32Array.from({ length: 10 }, (_, i) => (i % 3 === 0 ? 1 : -1));
    const code = new Uint8Array(codeBytes(10) + 1);
    writeSignCode(vector, code, 1);
    expect(Array.from(code)).toEqual([0, 0b01001001, 0b10]);
  });

  it("weights each sign disagreement by the query's |value| (quantized to 0…15)", () => {
    const [query, ...vectors] = randomVectors(50, 100, 5) as [Float32Array, ...Float32Array[]];
    const index = indexOf(vectors, 100);
    const result = index.nearest(query, vectors.length);
    const brute = vectors.map((vector, id) => ({ id, distance: weightedDistance(query, vector) }));
    for (const candidate of result) expect(candidate.distance).toBe(brute[candidate.id]!.distance);
    expect(result.map((candidate) => candidate.distance)).toEqual(
      brute.map((candidate) => candidate.distance).sort((a, b) => a - b),
    );
    // A byte's table row: 0 for the query's own signs, the full weight of the byte for the opposite ones.
    const table = distanceTable(query);
    const queryCode = new Uint8Array(codeBytes(100));
    writeSignCode(query, queryCode, 0);
    const largest = Math.max(...Array.from(query, Math.abs));
    const firstByteWeight = Array.from(query.subarray(0, 8)).reduce(
      (sum, value) => sum + Math.round((Math.abs(value) / largest) * 15),
      0,
    );
    expect(table[queryCode[0]!]).toBe(0);
    expect(table[~queryCode[0]! & 0xff]).toBe(firstByteWeight);
  });
});

describe("sign-code index", () => {
  it("finds the exact nearest code when the whole set is scanned", () => {
    const vectors = randomVectors(40, 384); // ≤ limit × 10: a single, exact pass
    const index = indexOf(vectors, 384);
    const query = vectors[17]!;
    const result = index.nearest(query, 5);
    expect(result[0]).toEqual({ id: 17, distance: 0 });
    const brute = vectors
      .map((vector, id) => ({ id, distance: weightedDistance(query, vector) }))
      .sort((a, b) => a.distance - b.distance);
    expect(result.map((candidate) => candidate.distance)).toEqual(
      brute.slice(0, 5).map((candidate) => candidate.distance),
    );
  });

  it("keeps the nearest through the two-stage scan on a large set", () => {
    const vectors = randomVectors(5000, 384, 7);
    const index = indexOf(vectors, 384);
    for (const target of [3, 1234, 4999]) expect(index.nearest(vectors[target]!, 20)[0]!.id).toBe(target);
    expect(index.nearest(vectors[0]!, 20)).toHaveLength(20);
  });

  it("shortlists ≥ 95 % of the exact cosine top-10 on embedding-like vectors", () => {
    // 20,000 vectors and a shortlist of 40 (pre-selection 400) scale down the bench's 100,000 and 400. With
    // this seed the index finds 98 % (over five seeds 95–98 %); the plain Hamming distance between sign codes
    // it replaced found 91 % (85–91 %).
    const { vectors, queries } = sentenceLikeVectors(20_000, 50, 11);
    const index = indexOf(vectors, 384);
    const topTen = (query: Float32Array, ids: Iterable<number>): number[] =>
      Array.from(ids, (id) => ({ id, cosine: dot(query, vectors[id]!) }))
        .sort((a, b) => b.cosine - a.cosine)
        .slice(0, 10)
        .map((hit) => hit.id);
    let found = 0;
    for (const query of queries) {
      const exact = topTen(query, vectors.keys());
      // Rescoring the shortlist with exact cosine, as MemoryService.nearest does.
      const approximate = new Set(
        topTen(
          query,
          index.nearest(query, 40).map((candidate) => candidate.id),
        ),
      );
      found += exact.filter((id) => approximate.has(id)).length;
    }
    expect(found / (queries.length * 10)).toBeGreaterThanOrEqual(0.95);
  });

  it("replaces and deletes entries (swap-remove keeps the rest findable)", () => {
    const vectors = randomVectors(10, 64, 3);
    const index = indexOf(vectors, 64, 2);
    index.delete(0);
    index.delete(5);
    expect(index.size).toBe(8);
    expect(index.has(9)).toBe(true);
    expect(index.nearest(vectors[9]!, 1)[0]!.id).toBe(9);
    expect(index.nearest(vectors[5]!, 10).map((candidate) => candidate.id)).not.toContain(5);
    index.set(1, vectors[5]!);
    expect(index.nearest(vectors[5]!, 1)[0]).toEqual({ id: 1, distance: 0 });
    expect(index.nearest(vectors[1]!, 20)).toHaveLength(8);
  });

  it("ignores vectors and queries of another dimension count", () => {
    const index = indexOf(randomVectors(5, 64, 4), 64);
    index.set(99, new Float32Array(32));
    expect(index.has(99)).toBe(false);
    expect(index.nearest(new Float32Array(32), 3)).toEqual([]);
  });
});
