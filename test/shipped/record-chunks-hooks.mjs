/** Module hooks for record-chunks.mjs: runs on Node's hooks thread, appends each loaded bundle module's URL. */
import { appendFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const bundleDir = fileURLToPath(new URL("../../dist/bundle/", import.meta.url));
const recordDir = path.join(bundleDir, ".chunk-loads");
mkdirSync(recordDir, { recursive: true });
const recordFile = path.join(recordDir, `${process.pid}-${Date.now()}.txt`);

/** Records every module under dist/bundle/ as it loads. */
export async function load(url, context, nextLoad) {
  if (url.startsWith("file:")) {
    const file = fileURLToPath(url);
    if (file.startsWith(bundleDir)) appendFileSync(recordFile, `${path.relative(bundleDir, file)}\n`);
  }
  return nextLoad(url, context);
}
