import { constants, realpathSync, type Stats, statSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import {
  type FileGuardRuleId,
  type GuardFinding,
  judgePath,
  type SecurityLevel,
  strictest,
} from "../security/file-guard.js";
import { isWithin, type PathScope, resolveToolPath } from "../security/path-resolver.js";

/** A skill folder (or skills directory) the file guard did not let the catalog read. */
export interface SkillRefusal {
  /** The folder's name: the skill's own name is in a file that was never read. */
  folder: string;
  /** The path as found in the skills directory. */
  file: string;
  /** The skills directory the folder is in (the directory itself when the whole directory is refused). */
  dir?: string;
  rule: FileGuardRuleId;
  reason: string;
}

/** Rules that still apply inside a skills directory: its own files are read, but never Magpie's state or a key. */
export const RULES_INSIDE: ReadonlySet<FileGuardRuleId> = new Set([
  "file.magpie_state",
  "file.sensitive_path_read",
]);

/** A path in a skill folder after the guard looked at it: what it resolves to, and the refusal if any. */
export interface JudgedPath {
  real: string;
  stat: Stats;
  refusal: SkillRefusal | null;
}

/**
 * Judges one path of a skill folder as a file read, without opening it (realpath and stat only look): inside its
 * skills directory only the rules that hold anywhere apply; led outside by a symlink, or another name of a file
 * that may live anywhere (a hard link), it is judged as any file read. Null when it is gone or not judgeable.
 */
export async function judgeSkillPath(
  found: string,
  folder: string,
  rootReal: string,
  scope: PathScope,
  level: SecurityLevel,
): Promise<JudgedPath | null> {
  let real: string;
  let stat: Stats;
  try {
    real = realpathSync.native(found);
    stat = statSync(real);
  } catch {
    return null;
  }
  const hardLinked = stat.isFile() && stat.nlink > 1;
  let findings: GuardFinding[];
  if (!hardLinked && isWithin(real, rootReal)) {
    const inside = {
      requested: found,
      lexical: found,
      real,
      exists: true,
      isDirectory: stat.isDirectory(),
      hardLinked,
    };
    findings = judgePath({ ...inside, insideWorkspace: true }, "read", level, scope).filter((finding) =>
      RULES_INSIDE.has(finding.rule.id),
    );
  } else {
    const resolved = await resolveToolPath(found, scope).catch(() => null);
    if (resolved?.real !== real) return null;
    findings = judgePath(resolved, "read", level, scope);
  }
  return { real, stat, refusal: refusalOf(findings, folder, found, real, hardLinked) };
}

/** The refusal for the strictest finding; Warn refuses too, as nobody can be asked while scanning. */
export function refusalOf(
  findings: GuardFinding[],
  folder: string,
  file: string,
  real: string,
  hardLinked: boolean,
): SkillRefusal | null {
  const worst = strictest(findings);
  if (!worst || worst.verdict === "allow") return null;
  const how = hardLinked
    ? "is hard-linked (another name for it may live anywhere)"
    : real === path.resolve(file)
      ? `is ${worst.path}`
      : `resolves to ${worst.path}`;
  return {
    folder,
    file,
    rule: worst.rule.id,
    reason: `${how}: ${worst.rule.why} (${worst.verdict === "warn" ? "Warn: needs an owner, and none is asked while skills are scanned" : "Deny"}; not loaded)`,
  };
}

/**
 * Reads the file that was judged: opened without following a symlink and without blocking, and read only when it
 * is still the same regular file (device and inode), so a swap between the check and the open is not read.
 */
export async function readJudged(real: string, judged: Stats): Promise<Buffer | null> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const opened = await handle.stat();
    if (
      !opened.isFile() ||
      opened.dev !== judged.dev ||
      opened.ino !== judged.ino ||
      opened.nlink !== judged.nlink
    )
      return null;
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
