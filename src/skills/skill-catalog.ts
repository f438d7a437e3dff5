import {
  accessSync,
  type BigIntStats,
  constants,
  lstatSync,
  readdirSync,
  realpathSync,
  type Stats,
  statSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { errorMessage } from "../lib/errors.js";
import { judgePath, type SecurityLevel } from "../security/file-guard.js";
import { expandHome, isWithin, type PathScope, resolveToolPath } from "../security/path-resolver.js";
import type { SkillApproval, SkillApprovals } from "./skill-approvals.js";
import { judgeSkillPath, RULES_INSIDE, readJudged, refusalOf, type SkillRefusal } from "./skill-files.js";
import { SnapshotCache, type SnapshotResult, snapshotSkill } from "./skill-snapshot.js";

export type { SkillRefusal };

/** A skill's YAML front matter. Other keys (license, metadata …) are allowed and ignored. */
const frontMatterSchema = z.object({
  name: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$/, "a name is letters, digits, '-', '_' and '.' (at most 64)"),
  description: z.string().trim().min(1).max(1024),
  requires: z
    .strictObject({
      bins: z.array(z.string().min(1)).default([]),
      env: z.array(z.string().min(1)).default([]),
    })
    .prefault({}),
});

export interface Skill {
  name: string;
  description: string;
  file: string;
  /** The whole SKILL.md. */
  text: string;
  requires: { bins: string[]; env: string[] };
  /** The folder's content hash, when it was taken (approval required, or asked for). */
  hash?: string;
}

export interface SkillProblem {
  file: string;
  error: string;
}

/** A skill that is not loaded because its content is not the one an owner approved. */
export interface UnapprovedSkill {
  skill: Skill & { hash: string };
  /** `new`: never approved; `changed`: approved with another hash. */
  state: "new" | "changed";
  approval?: SkillApproval;
}

export interface SkillListing {
  /** Skills whose required programs and variables are present. */
  available: Skill[];
  /** Skills hidden because something they require is missing, with what. */
  hidden: Array<{ skill: Skill; missing: string[] }>;
  problems: SkillProblem[];
  /** Folders and directories refused by the file guard: never read, never offered to the model. */
  refused: SkillRefusal[];
  /** With `skills.requireApproval`: new or changed skills, not offered to the model until an owner approves. */
  unapproved: UnapprovedSkill[];
  /** Skills of a name already taken by an earlier folder or directory: never loaded. */
  duplicates: Array<{ skill: Skill; shadowedBy: Skill }>;
}

/** What `load` found for a name: the skill, or why it is not loaded. */
export type SkillLoad =
  | { skill: Skill }
  | { refusal: SkillRefusal }
  | { unapproved: UnapprovedSkill }
  | { problem: SkillProblem };

/** `skills.requireApproval` and where approvals are kept. */
export interface SkillApprovalPolicy {
  /** Read per call, so a config reload applies at the next scan. */
  required(): boolean;
  approvals: SkillApprovals;
}

interface CacheEntry {
  dev: number;
  ino: number;
  nlink: number;
  mtimeMs: number;
  ctimeMs: number;
  size: number;
  parsed: Skill | SkillProblem;
}

/** What the catalog judges paths with; read per call, so a config reload applies at the next scan. */
export interface SkillGuard {
  scope(): PathScope;
  level(): SecurityLevel;
}

export interface SkillCatalogOptions {
  /** Searched in order; the first skill of a name wins. */
  dirs: string[];
  guard: SkillGuard;
  env?: NodeJS.ProcessEnv;
  /** Called once per broken file version. */
  onProblem?(problem: SkillProblem): void;
  /** Called once per refused path and rule. */
  onRefused?(refusal: SkillRefusal): void;
  /** Pinned skills; without it every skill that passes the guard loads. */
  approval?: SkillApprovalPolicy;
  /** The wall clock (ms) files' timestamps are compared with (`settled`); tests move it. */
  clock?: () => number;
}

/** One result of a scan: a refused directory or folder, a broken file or a skill, with its directory's real path. */
interface Found {
  rootReal: string;
  item: Skill | SkillProblem | SkillRefusal;
}

/**
 * Skills: `<dir>/<folder>/SKILL.md` files, read on demand with a cache so edits are picked up without a restart.
 * A skill's text is untrusted input (anyone who can write the workspace wrote it): it is only text for the model.
 *
 * Reading a skill is a file read. A SKILL.md (or folder) that resolves outside its skills directory through a
 * symlink, or that is hard-linked, is judged by the file guard like any read; a skills directory inside the
 * workspace is judged too (the agent can replace it with a symlink). Scanning has no owner to ask, so a Warn
 * is a refusal: the folder is listed as refused with the rule ID and `invoke_skill` returns that refusal.
 * Magpie's own state is judged from its path alone and never opened (no readdir, no open).
 *
 * Pinned skills (`skills.requireApproval`): each skill folder is hashed (SKILL.md and every other file, see
 * snapshotSkill) and compared with the hash an owner approved; a new or changed skill is listed as unapproved and
 * never offered. `load` hashes the folder again and returns the text of that very read.
 */
export class SkillCatalog {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly reported = new Set<string>();
  private readonly snapshots = new SnapshotCache();
  /** Each skills directory's verdict, by everything it depends on (`rootInputs`): the same inputs, the same verdict. */
  private readonly rootVerdicts = new Map<string, SkillRefusal | null>();
  /** Each skills directory's entries, by its real path, with the stat they were read under (`listingSignature`). */
  private readonly rootEntries = new Map<string, KeptEntries>();
  /** The last scan and its signature (`keptScan`). */
  private keptListing: { signature: SignaturePart[]; found: Found[] } | undefined;

  constructor(private readonly options: SkillCatalogOptions) {}

  get dirs(): string[] {
    return this.options.dirs;
  }

  /** True when only approved skills load (`skills.requireApproval`). */
  get approvalRequired(): boolean {
    return this.options.approval?.required() ?? false;
  }

  /**
   * Every skill, sorted into available, hidden, unapproved, broken, shadowed and refused; files that changed are
   * judged and read again. `hashes` takes every skill's content hash even when approval is not required.
   */
  async list(options: { hashes?: boolean } = {}): Promise<SkillListing> {
    const listing: SkillListing = {
      available: [],
      hidden: [],
      problems: [],
      refused: [],
      unapproved: [],
      duplicates: [],
    };
    const seen = new Map<string, Skill>();
    const scope = this.options.guard.scope();
    const level = this.options.guard.level();
    const required = this.approvalRequired;
    const hashing = required || options.hashes === true;
    // Hashing reads every file of every folder: that listing is never kept (it is not the per-turn one).
    const found = hashing ? await this.scan(scope, level) : await this.keptScan(scope, level);
    for (const { rootReal, item: parsed } of found) {
      if ("rule" in parsed) {
        this.refuse(parsed, listing);
        continue;
      }
      if (!("name" in parsed)) {
        listing.problems.push(parsed);
        continue;
      }
      // Names are looked up case-insensitively, so `Deploy` after `deploy` is the same skill: the first wins.
      const shadowedBy = seen.get(parsed.name.toLowerCase());
      if (shadowedBy) {
        listing.duplicates.push({ skill: parsed, shadowedBy });
        continue;
      }
      seen.set(parsed.name.toLowerCase(), parsed);
      let skill = parsed;
      if (hashing) {
        const hashed = this.hashed(parsed, await this.snapshot(parsed, rootReal, scope, level, true));
        if ("rule" in hashed) {
          this.refuse(hashed, listing);
          continue;
        }
        if (!("name" in hashed)) {
          listing.problems.push(hashed);
          continue;
        }
        skill = hashed;
        const unapproved = required ? this.unapproved(hashed) : null;
        if (unapproved) {
          listing.unapproved.push(unapproved);
          continue;
        }
      }
      // Read per listing (programs and variables are not part of what is kept).
      const missing = this.missing(skill);
      if (missing.length > 0) listing.hidden.push({ skill, missing });
      else listing.available.push(skill);
    }
    return listing;
  }

  /**
   * What the directories hold, judged and parsed, in listing order: refused directories and folders, broken files
   * and skills. Every directory is judged and every SKILL.md looked at again.
   */
  private async scan(scope: PathScope, level: SecurityLevel): Promise<Found[]> {
    const found: Found[] = [];
    for (const dir of this.options.dirs) {
      const root = await this.openRoot(dir, scope, level, found);
      if (!root) continue;
      // Judged side by side (each is a few stat and realpath calls), then taken in order.
      const results = await Promise.all(root.entries.map((entry) => this.read(root, entry, scope, level)));
      for (const item of results) if (item) found.push({ rootReal: root.real, item });
    }
    return found;
  }

  /**
   * The scan, kept between listings while its signature is unchanged (issue 35, hot path: judging every folder
   * and SKILL.md took about 1.2 ms of each turn). The signature (`listingSignature`) is everything the scan's
   * verdicts and parses depend on, read afresh each time with synchronous calls; it is taken before and after a
   * scan, and the scan is kept only when both are the same and nothing in it was changed too recently for its
   * timestamps to tell (`settled`).
   */
  private async keptScan(scope: PathScope, level: SecurityLevel): Promise<Found[]> {
    const signature = () =>
      listingSignature(this.options.dirs, scope, level, {
        verdicts: this.rootVerdicts,
        entries: this.rootEntries,
        nowMs: this.options.clock?.() ?? Date.now(),
      });
    let before = signature();
    if (before === null) {
      // A directory not judged yet is not read for the signature: judge them first (the verdicts are kept).
      for (const dir of this.options.dirs) await this.openRoot(dir, scope, level, []);
      before = signature();
    }
    if (before !== null && this.keptListing && sameSignature(this.keptListing.signature, before.key))
      return this.keptListing.found;
    this.keptListing = undefined;
    const found = await this.scan(scope, level);
    const after = signature();
    if (
      before !== null &&
      after !== null &&
      sameSignature(after.key, before.key) &&
      settled(after.newestMs, this.options.clock?.() ?? Date.now())
    )
      this.keptListing = { signature: after.key, found };
    return found;
  }

  /** An available skill by name (case-insensitive). */
  async get(name: string): Promise<Skill | undefined> {
    const found = await this.find(name);
    return found && "text" in found ? found : undefined;
  }

  /** An available skill by name, else a refused folder of that name (case-insensitive); undefined when neither. */
  async find(name: string): Promise<Skill | SkillRefusal | undefined> {
    const wanted = name.trim().toLowerCase();
    const listing = await this.list();
    return (
      listing.available.find((skill) => skill.name.toLowerCase() === wanted) ??
      listing.refused.find((refusal) => refusal.folder.toLowerCase() === wanted)
    );
  }

  /**
   * A skill to hand to the model, by name (case-insensitive); undefined when no skill or folder has that name.
   * With approval required the folder is hashed afresh (no cache) and the text returned is the one of that read,
   * so a file swapped after the listing is caught: what is returned is what was checked.
   */
  async load(name: string): Promise<SkillLoad | undefined> {
    const wanted = name.trim().toLowerCase();
    const listing = await this.list();
    const unapproved = listing.unapproved.find((entry) => entry.skill.name.toLowerCase() === wanted);
    if (unapproved) return { unapproved };
    const skill = listing.available.find((entry) => entry.name.toLowerCase() === wanted);
    if (!skill) {
      const refusal = listing.refused.find((entry) => entry.folder.toLowerCase() === wanted);
      return refusal ? { refusal } : undefined;
    }
    if (!this.approvalRequired) return { skill };
    const checked = await this.fresh(skill);
    if ("rule" in checked) return { refusal: checked };
    if (!("name" in checked)) return { problem: checked };
    const changed = this.unapproved(checked);
    return changed ? { unapproved: changed } : { skill: checked };
  }

  /**
   * Records the current content hash of the skill of that name (the one that would load: the first of its name),
   * hashed afresh. Approval never overrides the file guard: a refused folder or a broken file can't be approved.
   */
  async approve(
    name: string,
    approvedBy: string,
    now = Date.now(),
  ): Promise<{ approval: SkillApproval; files: string[] } | { error: string }> {
    const approvals = this.options.approval?.approvals;
    if (!approvals) return { error: "skill approvals are not set up in this Magpie" };
    const wanted = name.trim().toLowerCase();
    const listing = await this.list();
    const skill = [
      ...listing.available,
      ...listing.hidden.map((entry) => entry.skill),
      ...listing.unapproved.map((entry) => entry.skill),
    ].find((entry) => entry.name.toLowerCase() === wanted);
    if (!skill) {
      const refusal = listing.refused.find((entry) => entry.folder.toLowerCase() === wanted);
      if (refusal)
        return {
          error: `skill folder '${refusal.folder}' is refused by ${refusal.rule}, it can't be approved`,
        };
      const problem = listing.problems.find((entry) => folderOf(entry.file).toLowerCase() === wanted);
      if (problem) return { error: `${problem.file} is broken: ${problem.error}` };
      const names = [...listing.available, ...listing.hidden.map((entry) => entry.skill)]
        .concat(listing.unapproved.map((entry) => entry.skill))
        .map((entry) => entry.name);
      return {
        error: `there is no skill named '${shownName(name)}'${names.length > 0 ? ` (skills: ${names.join(", ")})` : ""}`,
      };
    }
    const scope = this.options.guard.scope();
    const level = this.options.guard.level();
    const result = await this.snapshot(skill, realRootOf(skill), scope, level, false);
    const checked = this.hashed(skill, result);
    if ("rule" in checked)
      return {
        error: `${checked.file} is refused by ${checked.rule}, it can't be approved: ${checked.reason}`,
      };
    if (!("name" in checked)) return { error: `${checked.file}: ${checked.error}` };
    const approval: SkillApproval = {
      name: checked.name,
      hash: checked.hash,
      file: checked.file,
      approvedBy,
      approvedAt: now,
    };
    approvals.record(approval);
    return { approval, files: "snapshot" in result ? result.snapshot.files : [] };
  }

  /** The skill hashed afresh, with no cache: for `load`. */
  private async fresh(skill: Skill): Promise<(Skill & { hash: string }) | SkillRefusal | SkillProblem> {
    const scope = this.options.guard.scope();
    const level = this.options.guard.level();
    return this.hashed(skill, await this.snapshot(skill, realRootOf(skill), scope, level, false));
  }

  private snapshot(
    skill: Skill,
    rootReal: string,
    scope: PathScope,
    level: SecurityLevel,
    cached: boolean,
  ): Promise<SnapshotResult> {
    return snapshotSkill(
      path.dirname(skill.file),
      rootReal,
      scope,
      level,
      cached ? this.snapshots : undefined,
    );
  }

  /** The skill as the snapshot read it (front matter and text from the hashed bytes), or why not. */
  private hashed(
    skill: Skill,
    result: SnapshotResult,
  ): (Skill & { hash: string }) | SkillRefusal | SkillProblem {
    if ("refusal" in result) return { ...result.refusal, dir: skillDirOf(skill.file) };
    if ("problem" in result) return { file: skill.file, error: result.problem };
    const parsed = parseSkill(skill.file, result.snapshot.skillText);
    if (!("name" in parsed)) return parsed;
    // Its name changed between the scan and the hash: the next scan sees it as what it now is.
    if (parsed.name.toLowerCase() !== skill.name.toLowerCase())
      return { file: skill.file, error: `SKILL.md changed while it was read (now named '${parsed.name}')` };
    return { ...parsed, hash: result.snapshot.hash };
  }

  /** Null when the skill's hash is the approved one. */
  private unapproved(skill: Skill & { hash: string }): UnapprovedSkill | null {
    const approval = this.options.approval?.approvals.get(skill.name);
    if (approval?.hash === skill.hash) return null;
    return approval ? { skill, state: "changed", approval } : { skill, state: "new" };
  }

  /**
   * A skills directory's entries, or null when it is missing or refused. A directory in the workspace is judged in
   * full; one configured in `skills.dirs` is the owner's choice, judged only for Magpie's state and key files.
   *
   * The list is read for every turn (issue 35, hot path): what the verdict depends on — the directory's real path,
   * the real paths of the workspace and allowed paths, the scope and the level — is looked up with synchronous
   * realpath and stat calls (microseconds each) and the verdict judged once per distinct set; the entries are read
   * with `readdirSync`. Each awaited call through the thread pool cost a wake-up of the event loop, several
   * milliseconds each on a loaded box.
   */
  private async openRoot(
    dir: string,
    scope: PathScope,
    level: SecurityLevel,
    found: Found[],
  ): Promise<{ dir: string; real: string; entries: string[] } | null> {
    const inputs = rootInputs(dir, scope, level);
    if (!inputs) return null;
    let real = inputs.real;
    let refusal = this.rootVerdicts.get(inputs.key);
    if (refusal === undefined) {
      const resolved = await resolveToolPath(dir, scope).catch(() => null);
      if (!resolved?.exists || !resolved.isDirectory) return null;
      const inWorkspace = isWithin(path.resolve(dir), path.resolve(scope.workspace));
      const findings = judgePath(resolved, "read", level, scope).filter(
        (finding) => inWorkspace || RULES_INSIDE.has(finding.rule.id),
      );
      real = resolved.real;
      refusal = refusalOf(findings, dir, dir, real, false);
      // Kept only when nothing it depends on moved while it was judged.
      if (resolved.real === inputs.real && rootInputs(dir, scope, level)?.key === inputs.key) {
        if (this.rootVerdicts.size >= ROOT_VERDICTS_KEPT) this.rootVerdicts.clear();
        this.rootVerdicts.set(inputs.key, refusal);
      }
    }
    if (refusal) {
      found.push({ rootReal: real, item: { ...refusal, dir } });
      return null;
    }
    try {
      return { dir, real, entries: readdirSync(real).sort() };
    } catch {
      return null;
    }
  }

  private async read(
    root: { dir: string; real: string },
    entry: string,
    scope: PathScope,
    level: SecurityLevel,
  ): Promise<Skill | SkillProblem | SkillRefusal | null> {
    const file = path.join(root.dir, entry, "SKILL.md");
    // realpath and stat only look (neither opens the file): Magpie's state is judged before anything is opened.
    const judged = await judgeSkillPath(file, entry, root.real, scope, level);
    // Only regular files are read (a FIFO would block, a device would never end).
    if (!judged?.stat.isFile()) {
      this.cache.delete(file);
      return null;
    }
    if (judged.refusal) {
      this.cache.delete(file);
      return { ...judged.refusal, dir: root.dir };
    }
    const { stat } = judged;
    const cached = this.cache.get(file);
    if (
      cached &&
      cached.dev === stat.dev &&
      cached.ino === stat.ino &&
      cached.nlink === stat.nlink &&
      cached.mtimeMs === stat.mtimeMs &&
      cached.ctimeMs === stat.ctimeMs &&
      cached.size === stat.size
    )
      return cached.parsed;
    const bytes = await readJudged(judged.real, stat);
    if (bytes === null) return null;
    const parsed = parseSkill(file, bytes.toString("utf8"));
    // A file changed within the timestamps' granularity could change again with the same size and times.
    if (settled(Math.max(stat.mtimeMs, stat.ctimeMs), this.options.clock?.() ?? Date.now()))
      this.cache.set(file, {
        dev: stat.dev,
        ino: stat.ino,
        nlink: stat.nlink,
        mtimeMs: stat.mtimeMs,
        ctimeMs: stat.ctimeMs,
        size: stat.size,
        parsed,
      });
    else this.cache.delete(file);
    if (!("name" in parsed)) this.options.onProblem?.(parsed);
    return parsed;
  }

  private refuse(refusal: SkillRefusal, listing: SkillListing): void {
    listing.refused.push(refusal);
    const key = `${refusal.file}\0${refusal.rule}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.options.onRefused?.(refusal);
  }

  private missing(skill: Skill): string[] {
    const env = this.options.env ?? process.env;
    return [
      ...skill.requires.bins.filter((bin) => !onPath(bin, env.PATH)).map((bin) => `program ${bin}`),
      ...skill.requires.env.filter((name) => !env[name]).map((name) => `variable ${name}`),
    ];
  }
}

/**
 * How long after its last change a file's or directory's stat is trusted to show the next change. A file's times
 * come from the kernel's coarse clock (a tick of 1–10 ms; coarser on some network file systems), so two edits of
 * the same size within one tick leave the same size, mtime and ctime: what was read just after a change is not
 * kept (git's "racily clean" entries). A timestamp in the future (the clock set back) is never settled.
 */
const SETTLE_MS = 2_000;

function settled(newestMs: number, nowMs: number): boolean {
  return nowMs - newestMs >= SETTLE_MS;
}

/** One looked-at path in a listing signature: its stat (`stampOf`) or `-` when it could not be looked at. */
type SignaturePart = string | number;

/** A skills directory's sorted entries and the stat of the directory (`stampOf`) taken just before they were read. */
interface KeptEntries {
  stamp: SignaturePart[];
  entries: string[];
}

/**
 * Everything a scan's result depends on, read with synchronous calls (microseconds each), or null when a
 * directory could not be read or has no verdict yet (`verdicts`, by `rootInputs`; a refused one is not read): the
 * scope and the level (the scope carries the real paths of Magpie's state), and for each skills directory
 * `rootInputs` (its real path, the real paths of the workspace and allowed paths), its own lstat and its entries
 * (`entriesOf`: read again only when that lstat changed);
 * for each entry, the lstat of its SKILL.md and of the folder, and — unless the folder is a directory and the
 * SKILL.md a regular file (then the real path is `<real directory>/<entry>/SKILL.md` and its stat is that lstat) —
 * the SKILL.md's real path and the stat of that real file. Each stat is device, inode, mode, link count, size,
 * mtime and ctime: an edit, an entry added, removed or renamed, a folder or file swapped for a symlink or a hard
 * link (another inode, or a link count), a chmod — each changes it. `newestMs` is the newest mtime or ctime seen.
 *
 * The parts are compared one by one (`sameSignature`): numbers, no string built per turn (issue 35, hot path). The
 * SKILL.md is looked at before its folder, so a folder swapped for a symlink in between is seen as one (and its
 * real path looked up).
 */
function listingSignature(
  dirs: string[],
  scope: PathScope,
  level: SecurityLevel,
  kept: {
    verdicts: ReadonlyMap<string, SkillRefusal | null>;
    entries: Map<string, KeptEntries>;
    nowMs: number;
  },
): { key: SignaturePart[]; newestMs: number } | null {
  const key: SignaturePart[] = [level, scopeJson(scope)];
  const newest = { ms: 0 };
  for (const dir of dirs) {
    const inputs = rootInputs(dir, scope, level);
    if (!inputs) {
      key.push("-");
      continue;
    }
    // A directory is read only once it was judged, and never when it was refused (Magpie's state is not opened).
    const verdict = kept.verdicts.get(inputs.key);
    if (verdict === undefined) return null;
    key.push(inputs.key);
    if (verdict !== null) {
      key.push("refused");
      continue;
    }
    const rootStamp: SignaturePart[] = [];
    stampOf(inputs.lstat, inputs.real, rootStamp, newest);
    const entries = entriesOf(inputs.real, inputs.lstat, rootStamp, kept.entries, kept.nowMs);
    if (!entries) return null;
    key.push(...rootStamp);
    stampOf(dir === inputs.real ? inputs.lstat : lstatOrNull(dir), dir, key, newest);
    key.push(entries.length);
    for (const entry of entries) {
      key.push(entry);
      const folder = path.join(inputs.real, entry);
      const file = path.join(folder, "SKILL.md");
      const fileStat = lstatOrNull(file);
      const folderStat = lstatOrNull(folder);
      stampOf(fileStat, file, key, newest);
      stampOf(folderStat, folder, key, newest);
      // A directory (not a symlink) in the real skills directory and a regular file in it: nothing to resolve.
      if (folderStat?.isDirectory() && fileStat?.isFile()) {
        key.push("=");
        continue;
      }
      let real: string | null;
      try {
        real = realpathSync.native(path.join(dir, entry, "SKILL.md"));
      } catch {
        real = null;
      }
      key.push(real ?? "-");
      if (real !== null) stampOf(statOrNull(real), real, key, newest, true);
    }
  }
  return { key, newestMs: newest.ms };
}

/**
 * A skills directory's sorted entries: those read before while the directory's stat (device, inode, mode, link
 * count, size, mtime and ctime, taken before the read) is the same and was two seconds old then (`settled`), else
 * read now. Adding, removing or renaming an entry sets the directory's mtime and ctime to the kernel's clock
 * (POSIX, for link, unlink, rename, mkdir, rmdir, symlink and a created file); a time set back with `utimes` sets
 * the ctime all the same. What was read within a tick of the last change is read again each time (a second change
 * in the same tick leaves the same times). Saves the open, reads and close of a readdir per turn (issue 35).
 */
function entriesOf(
  real: string,
  lstat: Stats,
  stamp: SignaturePart[],
  kept: Map<string, KeptEntries>,
  nowMs: number,
): string[] | null {
  const before = kept.get(real);
  if (before && sameSignature(before.stamp, stamp)) return before.entries;
  let entries: string[];
  try {
    entries = readdirSync(real).sort();
  } catch {
    kept.delete(real);
    return null;
  }
  if (lstat.isDirectory() && settled(Math.max(lstat.mtimeMs, lstat.ctimeMs), nowMs)) {
    if (kept.size >= ROOT_VERDICTS_KEPT) kept.clear();
    kept.set(real, { stamp, entries });
  } else kept.delete(real);
  return entries;
}

function sameSignature(kept: readonly SignaturePart[], current: readonly SignaturePart[]): boolean {
  return kept.length === current.length && kept.every((part, index) => part === current[index]);
}

function lstatOrNull(target: string): Stats | null {
  try {
    return lstatSync(target);
  } catch {
    return null;
  }
}

function statOrNull(target: string): Stats | null {
  try {
    return statSync(target);
  } catch {
    return null;
  }
}

/**
 * A stat's parts of a signature: `-`, or device, inode, mode, link count, size, mtime and ctime. Plain numbers
 * are exact for all but the times (a few tenths of a microsecond now) and an inode or device number past 2^53
 * (overlayfs with `xino`, some network file systems): then the stat is taken again in bigint and given as
 * strings. The times need no more: a listing is kept only when its newest change is two seconds old (`settled`),
 * and any later change sets the ctime to the kernel's clock then — seconds apart, not a fraction of a microsecond.
 */
function stampOf(
  stat: Stats | null,
  target: string,
  key: SignaturePart[],
  newest: { ms: number },
  follow = false,
): void {
  if (!stat) {
    key.push("-");
    return;
  }
  if (stat.mtimeMs > newest.ms) newest.ms = stat.mtimeMs;
  if (stat.ctimeMs > newest.ms) newest.ms = stat.ctimeMs;
  if (Number.isSafeInteger(stat.ino) && Number.isSafeInteger(stat.dev)) {
    key.push(stat.dev, stat.ino, stat.mode, stat.nlink, stat.size, stat.mtimeMs, stat.ctimeMs);
    return;
  }
  let exact: BigIntStats;
  try {
    exact = follow ? statSync(target, { bigint: true }) : lstatSync(target, { bigint: true });
  } catch {
    key.push("-");
    return;
  }
  key.push(
    `${exact.dev}`,
    `${exact.ino}`,
    `${exact.mode}`,
    `${exact.nlink}`,
    `${exact.size}`,
    `${exact.mtimeNs}`,
    `${exact.ctimeNs}`,
  );
}

/** Verdicts on skills directories kept at most (a few per configuration; cleared past this). */
const ROOT_VERDICTS_KEPT = 64;

/** Each scope's JSON, by the scope object (`scopeOf` gives the same object while nothing in it changed). */
const scopeJsons = new WeakMap<PathScope, string>();

function scopeJson(scope: PathScope): string {
  let json = scopeJsons.get(scope);
  if (json === undefined) {
    json = JSON.stringify(scope);
    scopeJsons.set(scope, json);
  }
  return json;
}

/**
 * What a skills directory's verdict depends on, read with synchronous calls: its real path (null when it is
 * missing or not a directory, as `resolveToolPath` would find) and that path's lstat, the real paths of the
 * workspace and the allowed paths (inside or outside the workspace), the scope and the level. `key` is all of it.
 */
function rootInputs(
  dir: string,
  scope: PathScope,
  level: SecurityLevel,
): { key: string; real: string; lstat: Stats } | null {
  const lexical = path.resolve(scope.workspace, expandHome(dir, scope.home));
  let real: string;
  let lstat: Stats;
  try {
    real = realpathSync.native(lexical);
    lstat = lstatSync(real);
    // A real path is no symlink, unless it was just swapped for one: then where it leads decides.
    if (!(lstat.isDirectory() || (lstat.isSymbolicLink() && statSync(real).isDirectory()))) return null;
  } catch {
    return null;
  }
  // A root that doesn't exist holds no existing directory, whatever its parents resolve to.
  const roots = [
    scope.workspace,
    ...scope.allowedPaths.map((entry) => path.resolve(scope.workspace, expandHome(entry, scope.home))),
  ].map((root) => {
    try {
      return realpathSync.native(root);
    } catch {
      return null;
    }
  });
  return { key: `${JSON.stringify([dir, lexical, real, roots, level])}\0${scopeJson(scope)}`, real, lstat };
}

/** A name as typed, cut short for a reply: a skill's name is at most 64 characters, so more is never one. */
export function shownName(name: string): string {
  const trimmed = name.trim();
  return trimmed.length > 80 ? `${trimmed.slice(0, 80)}…` : trimmed;
}

/** The folder a SKILL.md is in (its name in the skills directory). */
export function folderOf(file: string): string {
  return path.basename(path.dirname(file));
}

/** The skills directory a SKILL.md was found in, as configured. */
export function skillDirOf(file: string): string {
  return path.dirname(path.dirname(file));
}

/** The real path of a skill's skills directory (the one its files are judged against). */
function realRootOf(skill: Skill): string {
  try {
    return realpathSync.native(skillDirOf(skill.file));
  } catch {
    return skillDirOf(skill.file);
  }
}

/** Parses a SKILL.md: YAML front matter between `---` lines, then the body. */
export function parseSkill(file: string, text: string): Skill | SkillProblem {
  const match = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!match)
    return { file, error: "no YAML front matter (start the file with ---, name:, description:, ---)" };
  let data: unknown;
  try {
    data = parseYaml(match[1] ?? "");
  } catch (error) {
    return { file, error: `front matter is not valid YAML: ${errorMessage(error).split("\n")[0]}` };
  }
  const parsed = frontMatterSchema.safeParse(data ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "(front matter)"}: ${issue.message}`,
    );
    return { file, error: issues.join("; ") };
  }
  return { ...parsed.data, file, text };
}

/** The directories skills are read from: `<workspace>/skills` first, then `skills.dirs` (`~` expanded). */
export function skillDirs(workspace: string, dirs: string[]): string[] {
  const expand = (dir: string) =>
    dir === "~" || dir.startsWith("~/") ? path.join(os.homedir(), dir.slice(1)) : dir;
  return [path.join(workspace, "skills"), ...dirs.map((dir) => path.resolve(expand(dir)))];
}

function onPath(bin: string, pathVariable: string | undefined): boolean {
  const candidates = bin.includes("/")
    ? [bin]
    : (pathVariable ?? "")
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, bin));
  return candidates.some((candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return statSync(candidate).isFile();
    } catch {
      return false;
    }
  });
}
