import { createHash } from "node:crypto";
import type { Stats } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import type { SecurityLevel } from "../security/file-guard.js";
import type { PathScope } from "../security/path-resolver.js";
import { judgeSkillPath, readJudged, type SkillRefusal } from "./skill-files.js";

/** A skill folder as read for its content hash. */
export interface SkillSnapshot {
  /** `sha256:<hex>` over the folder's name and every entry's kind, path, link target and content. */
  hash: string;
  /** The folder's entries, relative (`.` is the folder), in hash order. */
  files: string[];
  /** SKILL.md as it was read for the hash: what a skill loaded with this snapshot shows. */
  skillText: string;
}

export type SnapshotResult = { snapshot: SkillSnapshot } | { refusal: SkillRefusal } | { problem: string };

/** A skill folder is notes and a few scripts; past these it is refused rather than hashed on every turn. */
export const SNAPSHOT_LIMITS = { entries: 500, bytes: 8 * 1024 * 1024, depth: 8 };

type EntryKind = "dir" | "file" | "link-dir" | "link-file" | "other";

interface Entry {
  rel: string;
  kind: EntryKind;
  /** A symlink's own target text (a swapped-in link changes the hash even when it leads to the same bytes). */
  target: string;
  real: string;
  stat: Stats;
}

/** Thrown inside the walk to end it with a result. */
class WalkStop {
  constructor(readonly result: { refusal: SkillRefusal } | { problem: string }) {}
}

/** Snapshots cached by the folder's stat signature: unchanged folders are not read again on every scan. */
export class SnapshotCache {
  private readonly entries = new Map<string, { signature: string; snapshot: SkillSnapshot }>();

  get(folder: string, signature: string): SkillSnapshot | undefined {
    const cached = this.entries.get(folder);
    return cached?.signature === signature ? cached.snapshot : undefined;
  }

  set(folder: string, signature: string, snapshot: SkillSnapshot): void {
    this.entries.set(folder, { signature, snapshot });
  }
}

/**
 * Hashes a skill folder: SKILL.md and every other file in it (the scripts it names), each path judged by the file
 * guard as a read before anything is opened (a symlink that leads outside is judged as any read; Magpie's state is
 * never opened), each file read only if it is still the inode that was judged. The hash is over the bytes read
 * here, and `skillText` comes from the same read — what is shown is what was hashed. With a cache, a folder whose
 * entries all keep their inode, size, mtime and ctime is not read again.
 */
export async function snapshotSkill(
  folderPath: string,
  rootReal: string,
  scope: PathScope,
  level: SecurityLevel,
  cache?: SnapshotCache,
): Promise<SnapshotResult> {
  const folder = path.basename(folderPath);
  const entries: Entry[] = [];
  const visited = new Set<string>();
  let bytes = 0;

  const walk = async (found: string, rel: string, depth: number): Promise<void> => {
    const own = await fs.lstat(found).catch(() => null);
    if (!own) return;
    const judged = await judgeSkillPath(found, folder, rootReal, scope, level);
    if (!judged) return;
    if (judged.refusal) throw new WalkStop({ refusal: { ...judged.refusal, file: found } });
    const isLink = own.isSymbolicLink();
    const kind: EntryKind = judged.stat.isDirectory()
      ? isLink
        ? "link-dir"
        : "dir"
      : judged.stat.isFile()
        ? isLink
          ? "link-file"
          : "file"
        : "other";
    const target = isLink ? await fs.readlink(found).catch(() => "") : "";
    entries.push({ rel, kind, target, real: judged.real, stat: judged.stat });
    if (entries.length > SNAPSHOT_LIMITS.entries)
      throw new WalkStop({
        problem: `the folder holds more than ${SNAPSHOT_LIMITS.entries} entries: too many to hash (keep a skill to its notes and scripts)`,
      });
    if (kind === "file" || kind === "link-file") {
      bytes += judged.stat.size;
      if (bytes > SNAPSHOT_LIMITS.bytes)
        throw new WalkStop({
          problem: `the folder holds more than ${SNAPSHOT_LIMITS.bytes / 1024 / 1024} MB: too much to hash (keep a skill to its notes and scripts)`,
        });
      return;
    }
    if (kind !== "dir" && kind !== "link-dir") return;
    if (visited.has(judged.real))
      throw new WalkStop({ problem: `${rel} leads back to a folder already read (a symlink loop)` });
    visited.add(judged.real);
    if (depth >= SNAPSHOT_LIMITS.depth)
      throw new WalkStop({ problem: `${rel} is nested deeper than ${SNAPSHOT_LIMITS.depth} folders` });
    const names = await fs.readdir(judged.real).catch(() => [] as string[]);
    for (const name of names.sort())
      await walk(path.join(found, name), rel === "." ? name : `${rel}/${name}`, depth + 1);
  };

  try {
    await walk(folderPath, ".", 0);
  } catch (error) {
    if (error instanceof WalkStop) return error.result;
    throw error;
  }
  // Plain code-unit order: the same on every machine and locale.
  entries.sort((left, right) => (left.rel < right.rel ? -1 : left.rel > right.rel ? 1 : 0));
  const signature = entries
    .map(
      ({ rel, kind, target, stat }) =>
        `${kind}\0${rel}\0${target}\0${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`,
    )
    .join("\n");
  const cached = cache?.get(folderPath, signature);
  if (cached) return { snapshot: cached };

  const hash = createHash("sha256").update(`magpie-skill-v1\0${folder}\0`);
  let skillText: string | null = null;
  for (const entry of entries) {
    let content: Buffer = Buffer.alloc(0);
    if (entry.kind === "file" || entry.kind === "link-file") {
      const read = await readJudged(entry.real, entry.stat);
      if (read === null)
        return { problem: `${entry.rel} changed while it was read; it is read again next time` };
      content = read;
      if (entry.rel === "SKILL.md") skillText = read.toString("utf8");
    }
    // Lengths and NULs (never in a path) keep one entry's bytes from passing for another's.
    hash.update(`${entry.kind}\0${entry.rel}\0${entry.target}\0${content.length}\0`);
    hash.update(content);
  }
  if (skillText === null) return { problem: "SKILL.md is not a readable file" };
  const snapshot = {
    hash: `sha256:${hash.digest("hex")}`,
    files: entries.map((entry) => entry.rel),
    skillText,
  };
  cache?.set(folderPath, signature, snapshot);
  return { snapshot };
}
