import { codeWords, popcount, writeSignCode } from "./vector-math.js";

/** Words (of 32 sign bits) compared in the pre-selection stage. */
const PREFIX_WORDS = 4;
/** Candidates kept by the pre-selection stage, per requested result. */
const PRESELECT_FACTOR = 10;

function countBelow(histogram: Uint32Array, cutoff: number): number {
  let sum = 0;
  for (let distance = 0; distance < cutoff; distance++) sum += histogram[distance]!;
  return sum;
}

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

  /**
   * The `limit` nearest codes to `query`. Two stages keep a 100k scan within a few milliseconds: the
   * first 128 bits pre-select `limit × 10` candidates, the full code ranks those.
   */
  nearest(query: Float32Array, limit: number): VectorCandidate[] {
    if (this.count === 0 || limit <= 0) return [];
    const words = this.words;
    const queryCode = new Uint32Array(words);
    writeSignCode(query, queryCode, 0);
    const prefixWords = Math.min(PREFIX_WORDS, words);
    let slots: Int32Array | null = null;
    if (prefixWords < words && this.count > limit * PRESELECT_FACTOR) {
      slots = this.closest(null, queryCode, prefixWords, limit * PRESELECT_FACTOR);
    }
    const chosen = this.closest(slots, queryCode, words, limit);
    const candidates: VectorCandidate[] = [];
    for (const slot of chosen) {
      let distance = 0;
      for (let word = 0; word < words; word++)
        distance += popcount(this.codes[slot * words + word]! ^ queryCode[word]!);
      candidates.push({ id: this.ids[slot]!, distance });
    }
    return candidates.sort((a, b) => a.distance - b.distance);
  }

  /** Slots (among `slots`, or all) of the `limit` codes nearest on their first `words` words. */
  private closest(
    slots: Int32Array | null,
    queryCode: Uint32Array,
    words: number,
    limit: number,
  ): Int32Array {
    const total = slots ? slots.length : this.count;
    const stride = this.words;
    const codes = this.codes;
    const distances = new Uint16Array(total);
    const histogram = new Uint32Array(words * 32 + 1);
    if (!slots && words === 4) {
      // The pre-selection pass over every code: unrolled, it is most of the work of a search.
      const q0 = queryCode[0]!;
      const q1 = queryCode[1]!;
      const q2 = queryCode[2]!;
      const q3 = queryCode[3]!;
      for (let position = 0, base = 0; position < total; position++, base += stride) {
        const distance =
          popcount(codes[base]! ^ q0) +
          popcount(codes[base + 1]! ^ q1) +
          popcount(codes[base + 2]! ^ q2) +
          popcount(codes[base + 3]! ^ q3);
        distances[position] = distance;
        histogram[distance]!++;
      }
    } else {
      for (let position = 0; position < total; position++) {
        const base = (slots ? slots[position]! : position) * stride;
        let distance = 0;
        for (let word = 0; word < words; word++) distance += popcount(codes[base + word]! ^ queryCode[word]!);
        distances[position] = distance;
        histogram[distance]!++;
      }
    }
    // Distances are small integers, so a histogram finds the cut-off without sorting everything.
    let cutoff = 0;
    for (let seen = 0; cutoff < histogram.length; cutoff++) {
      seen += histogram[cutoff]!;
      if (seen >= limit) break;
    }
    const chosen = new Int32Array(Math.min(limit, total));
    let below = 0;
    let atCutoff = 0;
    const roomAtCutoff = chosen.length - (limit <= total ? countBelow(histogram, cutoff) : total);
    for (let position = 0; position < total && below + atCutoff < chosen.length; position++) {
      const distance = distances[position]!;
      const slot = slots ? slots[position]! : position;
      if (distance < cutoff) chosen[below++ + atCutoff] = slot;
      else if (distance === cutoff && atCutoff < roomAtCutoff) chosen[below + atCutoff++] = slot;
    }
    return chosen;
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
