import fs from "node:fs/promises";
import path from "node:path";

const IMAGE_EXTENSIONS = new Set([
  ".png",
  ".jpg",
  ".jpeg",
  ".gif",
  ".webp",
  ".bmp",
  ".tif",
  ".tiff",
  ".ico",
  ".svg",
  ".avif",
  ".heic",
]);

/** Judged by extension: file_read describes these instead of dumping bytes. */
export function isImagePath(file: string): boolean {
  return IMAGE_EXTENSIONS.has(path.extname(file).toLowerCase());
}

export interface ImageDescription {
  format: string | null;
  width: number | null;
  height: number | null;
}

/** Format and dimensions from the file header; nulls when the format isn't recognized. */
export async function describeImage(file: string): Promise<ImageDescription> {
  const handle = await fs.open(file, "r");
  try {
    // Headers of every supported format fit in the first 512 KB (JPEG can need more than a few bytes).
    const buffer = Buffer.alloc(512 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const { imageSize } = await import("image-size");
    const result = imageSize(buffer.subarray(0, bytesRead));
    return { format: result.type ?? null, width: result.width ?? null, height: result.height ?? null };
  } catch {
    return { format: null, width: null, height: null };
  } finally {
    await handle.close();
  }
}
