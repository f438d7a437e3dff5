import { codeBytes, writeSignCode } from "./vector-math.js";

/** Code bytes (8 dimensions each) compared in the pre-selection stage: the first 128 dimensions. */
const PREFIX_BYTES = 16;
/** Candidates kept by the pre-selection stage, per requested result. */
export const PRESELECT_FACTOR = 10;
/** The query's per-dimension weights are rounded to 0…15: a byte's distance fits in a Uint8 (≤ 120). */
const WEIGHT_LEVELS = 15;

export interface VectorCandidate {
  id: number;
  /**
   * Weighted sign distance: the query's |value| (scaled to 0…15) summed over the dimensions whose sign
   * the code doesn't share; 0 = same direction in every dimension. Lower is nearer.
   */
  distance: number;
}

/**
 * For every code byte, the distance of each of its 256 values to the query: `table[byte * 256 + value]`.
 * Weighting a sign disagreement by the query's |value| there ranks codes by the dot product of the full
 * precision query with the code's ±1 vector (Σ|q| − 2 × distance), an asymmetric estimate that is far
 * closer to cosine than the Hamming distance between two sign codes, and costs no memory per vector.
 */
export function distanceTable(query: Float32Array): Uint8Array {
  let largest = 0;
  for (const value of query) largest = Math.max(largest, Math.abs(value));
  const scale = largest > 0 ? WEIGHT_LEVELS / largest : 0;
  const bytes = codeBytes(query.length);
  const queryCode = new Uint8Array(bytes);
  writeSignCode(query, queryCode, 0);
  const table = new Uint8Array(bytes * 256);
  const weights = new Uint8Array(8);
  // Summed weights of the bits set in each mask: a disagreement mask is `value ^ query byte`.
  const maskWeight = new Uint8Array(256);
  for (let byte = 0; byte < bytes; byte++) {
    for (let bit = 0; bit < 8; bit++) {
      const dimension = byte * 8 + bit;
      weights[bit] = dimension < query.length ? Math.round(Math.abs(query[dimension]!) * scale) : 0;
    }
    for (let mask = 1; mask < 256; mask++) {
      const lowest = 31 - Math.clz32(mask & -mask);
      maskWeight[mask] = maskWeight[mask & (mask - 1)]! + weights[lowest]!;
    }
    const queryByte = queryCode[byte]!;
    for (let value = 0; value < 256; value++) table[byte * 256 + value] = maskWeight[value ^ queryByte]!;
  }
  return table;
}

/**
 * In-memory sign-bit index of one agent's embeddings (one model, one dimension count). Memory per 384-dim
 * vector: a 48-byte code and a 4-byte id, plus one id → slot map entry: 105 bytes per vector measured at
 * 100,000 (arrays grow by doubling), about 10 MB; the Float32 vector would be 1,536 bytes. It only shortlists candidates;
 * recall rescores them with the exact Float32 vectors from SQLite (binary quantization + rescoring).
 */
export class SignCodeIndex {
  private readonly bytes: number;
  private codes: Uint8Array;
  private ids: Int32Array;
  private readonly slotOf = new Map<number, number>();
  private count = 0;

  constructor(
    readonly dimensions: number,
    capacity = 1024,
  ) {
    this.bytes = codeBytes(dimensions);
    this.codes = new Uint8Array(capacity * this.bytes);
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
    writeSignCode(vector, this.codes, slot * this.bytes);
  }

  delete(id: number): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    const last = this.count - 1;
    if (slot !== last) {
      // Swap-remove keeps the arrays dense.
      const movedId = this.ids[last]!;
      this.ids[slot] = movedId;
      this.codes.copyWithin(slot * this.bytes, last * this.bytes, (last + 1) * this.bytes);
      this.slotOf.set(movedId, slot);
    }
    this.slotOf.delete(id);
    this.count = last;
  }

  /**
   * The `limit` codes nearest to `query` by weighted sign distance (see `distanceTable`). Two stages keep a
   * 100k scan within a few milliseconds: the first 128 dimensions pre-select `limit × 10` candidates, the
   * full code ranks those.
   */
  nearest(query: Float32Array, limit: number): VectorCandidate[] {
    if (this.count === 0 || limit <= 0 || query.length !== this.dimensions) return [];
    const table = distanceTable(query);
    const prefixBytes = Math.min(PREFIX_BYTES, this.bytes);
    let slots: Int32Array | null = null;
    if (prefixBytes < this.bytes && this.count > limit * PRESELECT_FACTOR) {
      slots = this.closest(null, table, prefixBytes, limit * PRESELECT_FACTOR);
    }
    const candidates: VectorCandidate[] = [];
    for (const slot of this.closest(slots, table, this.bytes, limit)) {
      candidates.push({ id: this.ids[slot]!, distance: this.distance(slot, table, this.bytes) });
    }
    return candidates.sort((a, b) => a.distance - b.distance);
  }

  private distance(slot: number, table: Uint8Array, bytes: number): number {
    const base = slot * this.bytes;
    let distance = 0;
    for (let byte = 0; byte < bytes; byte++) distance += table[(byte << 8) | this.codes[base + byte]!]!;
    return distance;
  }

  /** Slots (among `slots`, or all) of the `limit` codes nearest on their first `bytes` bytes. */
  private closest(slots: Int32Array | null, table: Uint8Array, bytes: number, limit: number): Int32Array {
    const total = slots ? slots.length : this.count;
    const maxDistance = bytes * 8 * WEIGHT_LEVELS;
    const distances = maxDistance > 0xffff ? new Uint32Array(total) : new Uint16Array(total);
    const histogram = new Uint32Array(maxDistance + 1);
    if (!slots && bytes === PREFIX_BYTES) {
      // The pre-selection pass over every code, unrolled for PREFIX_BYTES = 16: most of a search's work.
      const codes = this.codes;
      const stride = this.bytes;
      for (let position = 0, base = 0; position < total; position++, base += stride) {
        const distance =
          table[codes[base]!]! +
          table[256 | codes[base + 1]!]! +
          table[512 | codes[base + 2]!]! +
          table[768 | codes[base + 3]!]! +
          table[1024 | codes[base + 4]!]! +
          table[1280 | codes[base + 5]!]! +
          table[1536 | codes[base + 6]!]! +
          table[1792 | codes[base + 7]!]! +
          table[2048 | codes[base + 8]!]! +
          table[2304 | codes[base + 9]!]! +
          table[2560 | codes[base + 10]!]! +
          table[2816 | codes[base + 11]!]! +
          table[3072 | codes[base + 12]!]! +
          table[3328 | codes[base + 13]!]! +
          table[3584 | codes[base + 14]!]! +
          table[3840 | codes[base + 15]!]!;
        distances[position] = distance;
        histogram[distance]!++;
      }
    } else {
      for (let position = 0; position < total; position++) {
        const distance = this.distance(slots ? slots[position]! : position, table, bytes);
        distances[position] = distance;
        histogram[distance]!++;
      }
    }
    // Distances are small integers, so a histogram finds the cut-off without sorting everything.
    const take = Math.min(limit, total);
    let cutoff = 0;
    let below = 0;
    while (cutoff < histogram.length && below + histogram[cutoff]! < take) below += histogram[cutoff++]!;
    let roomAtCutoff = take - below;
    const chosen = new Int32Array(take);
    for (let position = 0, filled = 0; position < total && filled < take; position++) {
      const distance = distances[position]!;
      const slot = slots ? slots[position]! : position;
      if (distance < cutoff) chosen[filled++] = slot;
      else if (distance === cutoff && roomAtCutoff > 0) {
        roomAtCutoff--;
        chosen[filled++] = slot;
      }
    }
    return chosen;
  }

  private grow(): void {
    const capacity = this.ids.length * 2;
    const ids = new Int32Array(capacity);
    ids.set(this.ids);
    const codes = new Uint8Array(capacity * this.bytes);
    codes.set(this.codes);
    this.ids = ids;
    this.codes = codes;
  }
}
