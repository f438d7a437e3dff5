/** Float32 vectors: BLOB encoding, normalization, dot product, sign-bit codes and Hamming distance. */

/** Encodes a vector as a little-endian Float32 BLOB. */
export function vectorToBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** Decodes a Float32 BLOB (copied, so it is aligned and independent of the row buffer). */
export function blobToVector(blob: Buffer): Float32Array {
  const vector = new Float32Array(blob.byteLength / 4);
  new Uint8Array(vector.buffer).set(blob);
  return vector;
}

/** Unit-length copy; cosine similarity of unit vectors is their dot product. */
export function normalize(values: ArrayLike<number>): Float32Array {
  const vector = Float32Array.from(values);
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  const norm = Math.sqrt(sum) || 1;
  for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

/** Dot product of `a` and the vector stored at `offset` in `b` (a packed matrix or a single vector). */
export function dot(a: Float32Array, b: Float32Array, offset = 0): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const n = a.length;
  let i = 0;
  for (; i + 3 < n; i += 4) {
    s0 += a[i]! * b[offset + i]!;
    s1 += a[i + 1]! * b[offset + i + 1]!;
    s2 += a[i + 2]! * b[offset + i + 2]!;
    s3 += a[i + 3]! * b[offset + i + 3]!;
  }
  for (; i < n; i++) s0 += a[i]! * b[offset + i]!;
  return s0 + s1 + s2 + s3;
}

/** Words of 32 sign bits needed for a vector of `dimensions`. */
export const codeWords = (dimensions: number): number => Math.ceil(dimensions / 32);

/** Writes the sign bits of `vector` into `target` at word `offset` (binary quantization). */
export function writeSignCode(vector: Float32Array, target: Uint32Array, offset: number): void {
  const words = codeWords(vector.length);
  for (let word = 0; word < words; word++) {
    let bits = 0;
    const base = word * 32;
    const end = Math.min(32, vector.length - base);
    for (let bit = 0; bit < end; bit++) if (vector[base + bit]! > 0) bits |= 1 << bit;
    target[offset + word] = bits >>> 0;
  }
}

/** Number of set bits in a 32-bit word. */
export function popcount(value: number): number {
  let x = value - ((value >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}
