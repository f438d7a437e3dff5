import fs from "node:fs/promises";
import type { ToolContext } from "../context.js";

const SCRATCH_KEY = "files.read";

/** Remembers which files a session has read (and their mtime), so overwrites can require a prior read. */
function readFiles(context: ToolContext): Map<string, number> {
  let files = context.scratch.get<Map<string, number>>(context.sessionKey, SCRATCH_KEY);
  if (!files) {
    files = new Map();
    context.scratch.set(context.sessionKey, SCRATCH_KEY, files);
  }
  return files;
}

/** Records that the session has seen the current content of `realPath`. */
export async function markRead(context: ToolContext, realPath: string): Promise<void> {
  const stats = await fs.stat(realPath);
  readFiles(context).set(realPath, stats.mtimeMs);
}

/** Null when the session may overwrite `realPath`; otherwise why not. */
export async function overwriteProblem(context: ToolContext, realPath: string): Promise<string | null> {
  const seenMtime = readFiles(context).get(realPath);
  if (seenMtime === undefined) {
    return `${realPath} already exists and has not been read in this session. Read it with file_read first, then write.`;
  }
  const stats = await fs.stat(realPath);
  if (stats.mtimeMs !== seenMtime) {
    return `${realPath} changed since it was read in this session. Read it again with file_read, then write.`;
  }
  return null;
}
