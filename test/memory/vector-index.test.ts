import { describe, expect, it } from "vitest";
import { SignCodeIndex } from "../../src/memory/vector-index.js";
import { codeWords, normalize, popcount, writeSignCode } from "../../src/memory/vector-math.js";

function randomVectors(count: number, dimensions: number, seed = 1): Float32Array[] {
  let state = seed;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
  return Array.from({ length: count }, () => normalize(Array.from({ length: dimensions }, next)));
}

function hamming(a: Float32Array, b: Float32Array): number {
  const words = codeWords(a.length);
  const codeA = new Uint32Array(words);
  const codeB = new Uint32Array(words);
  writeSignCode(a, codeA, 0);
  writeSignCode(b, codeB, 0);
  let distance = 0;
  for (let word = 0; word < words; word++) distance += popcount(codeA[word]! ^ codeB[word]!);
  return distance;
}

describe("sign-code index", () => {
  it("finds the exact nearest code when the whole set is scanned", () => {
    const vectors = randomVectors(40, 384); // ≤ limit × 10: a single, exact pass
    const index = new SignCodeIndex(384);
    vectors.forEach((vector, id) => {
      index.set(id, vector);
    });
    const query = vectors[17]!;
    const result = index.nearest(query, 5);
    expect(result[0]).toEqual({ id: 17, distance: 0 });
    const brute = vectors
      .map((vector, id) => ({ id, distance: hamming(query, vector) }))
      .sort((a, b) => a.distance - b.distance);
    expect(result.map((candidate) => candidate.distance)).toEqual(
      brute.slice(0, 5).map((candidate) => candidate.distance),
    );
  });

  it("keeps the nearest through the two-stage scan on a large set", () => {
    const vectors = randomVectors(5000, 384, 7);
    const index = new SignCodeIndex(384);
    vectors.forEach((vector, id) => {
      index.set(id, vector);
    });
    for (const target of [3, 1234, 4999]) expect(index.nearest(vectors[target]!, 20)[0]!.id).toBe(target);
    expect(index.nearest(vectors[0]!, 20)).toHaveLength(20);
  });

  it("replaces and deletes entries (swap-remove keeps the rest findable)", () => {
    const vectors = randomVectors(10, 64, 3);
    const index = new SignCodeIndex(64, 2);
    vectors.forEach((vector, id) => {
      index.set(id, vector);
    });
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
});
