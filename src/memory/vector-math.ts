/** Float32 vectors: BLOB encoding, normalization, dot product and sign-bit codes. */

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

/** Bytes of 8 sign bits needed for a vector of `dimensions`. */
export const codeBytes = (dimensions: number): number => Math.ceil(dimensions / 8);

/**
 * Writes the sign bits of `vector` into `target` at byte `offset` (binary quantization): bit `j` of byte `b`
 * is set when dimension `8b + j` is positive. Byte-wise, so the layout doesn't depend on the CPU's endianness.
 */
export function writeSignCode(vector: Float32Array, target: Uint8Array, offset: number): void {
  const bytes = codeBytes(vector.length);
  for (let byte = 0; byte < bytes; byte++) {
    let bits = 0;
    const base = byte * 8;
    const end = Math.min(8, vector.length - base);
    for (let bit = 0; bit < end; bit++) if (vector[base + bit]! > 0) bits |= 1 << bit;
    target[offset + byte] = bits;
  }
}
