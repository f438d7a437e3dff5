import { codeWords, popcount, writeSignCode } from "./vector-math.js";

export interface VectorCandidate {
  id: number;
  /** Hamming distance between sign codes (0 = same direction in every dimension). */
  distance: number;
}

/**
 * In-memory sign-bit index of one agent's embeddings (one model, one dimension count): 48 bytes per
 * 384-dim vector instead of 1.5 KB, scanned with popcount. It only shortlists candidates; recall rescores
 * them with the exact Float32 vectors from SQLite (binary quantization + rescoring).
 */
export class SignCodeIndex {
  private readonly words: number;
  private codes: Uint32Array;
  private ids: Int32Array;
  private readonly slotOf = new Map<number, number>();
  private count = 0;

  constructor(
    readonly dimensions: number,
    capacity = 1024,
  ) {
    this.words = codeWords(dimensions);
    this.codes = new Uint32Array(capacity * this.words);
    this.ids = new Int32Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  has(id: number): boolean {
    return this.slotOf.has(id);
  }

  /** Adds or replaces the vector of memory `id`. */
  set(id: number, vector: Float32Array): void {
    if (vector.length !== this.dimensions) return;
    let slot = this.slotOf.get(id);
    if (slot === undefined) {
      if (this.count === this.ids.length) this.grow();
      slot = this.count++;
      this.slotOf.set(id, slot);
      this.ids[slot] = id;
    }
    writeSignCode(vector, this.codes, slot * this.words);
  }

  delete(id: number): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    const last = this.count - 1;
    if (slot !== last) {
      // Swap-remove keeps the arrays dense.
      const movedId = this.ids[last]!;
      this.ids[slot] = movedId;
      this.codes.copyWithin(slot * this.words, last * this.words, (last + 1) * this.words);
      this.slotOf.set(movedId, slot);
    }
    this.slotOf.delete(id);
    this.count = last;
  }

  /** The `limit` nearest codes to `query` (ties at the cut-off broken by insertion order). */
  nearest(query: Float32Array, limit: number): VectorCandidate[] {
    if (this.count === 0 || limit <= 0) return [];
    const words = this.words;
    const queryCode = new Uint32Array(words);
    writeSignCode(query, queryCode, 0);
    const distances = new Uint16Array(this.count);
    const histogram = new Uint32Array(this.dimensions + 1);
    const codes = this.codes;
    for (let slot = 0; slot < this.count; slot++) {
      let distance = 0;
      const base = slot * words;
      for (let word = 0; word < words; word++) distance += popcount(codes[base + word]! ^ queryCode[word]!);
      distances[slot] = distance;
      histogram[distance]!++;
    }
    // Distances are small integers, so a histogram finds the cut-off without sorting everything.
    let cutoff = 0;
    for (let seen = 0; cutoff <= this.dimensions; cutoff++) {
      seen += histogram[cutoff]!;
      if (seen >= limit) break;
    }
    const candidates: VectorCandidate[] = [];
    const atCutoff: VectorCandidate[] = [];
    for (let slot = 0; slot < this.count; slot++) {
      const distance = distances[slot]!;
      if (distance < cutoff) candidates.push({ id: this.ids[slot]!, distance });
      else if (distance === cutoff && atCutoff.length < limit)
        atCutoff.push({ id: this.ids[slot]!, distance });
    }
    candidates.sort((a, b) => a.distance - b.distance);
    return candidates.concat(atCutoff.slice(0, limit - candidates.length));
  }

  private grow(): void {
    const capacity = this.ids.length * 2;
    const ids = new Int32Array(capacity);
    ids.set(this.ids);
    const codes = new Uint32Array(capacity * this.words);
    codes.set(this.codes);
    this.ids = ids;
    this.codes = codes;
  }
}
