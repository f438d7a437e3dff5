import type { Readable } from "node:stream";

/** Reads a body up to `maxBytes`, then stops reading (the rest is never downloaded). */
export async function readCapped(
  stream: Readable,
  maxBytes: number,
): Promise<{ buffer: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const room = maxBytes - size;
    if (chunk.length >= room) {
      chunks.push(chunk.subarray(0, room));
      size += room;
      truncated = chunk.length > room;
      if (truncated) {
        stream.destroy();
        break;
      }
      continue;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { buffer: Buffer.concat(chunks), truncated };
}
