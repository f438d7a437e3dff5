import { accessSync, constants, realpathSync, type Stats, statSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import {
  type FileGuardRuleId,
  type GuardFinding,
  judgePath,
  type SecurityLevel,
  strictest,
} from "../security/file-guard.js";
import { isWithin, type PathScope, resolveToolPath } from "../security/path-resolver.js";

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
}

export interface SkillProblem {
  file: string;
  error: string;
}

/** A skill folder (or skills directory) the file guard did not let the catalog read. */
export interface SkillRefusal {
  /** The folder's name: the skill's own name is in a file that was never read. */
  folder: string;
  /** The path as found in the skills directory. */
  file: string;
  rule: FileGuardRuleId;
  reason: string;
}

export interface SkillListing {
  /** Skills whose required programs and variables are present. */
  available: Skill[];
  /** Skills hidden because something they require is missing, with what. */
  hidden: Array<{ skill: Skill; missing: string[] }>;
  problems: SkillProblem[];
  /** Folders and directories refused by the file guard: never read, never offered to the model. */
  refused: SkillRefusal[];
}

interface CacheEntry {
  dev: number;
  ino: number;
  mtimeMs: number;
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
}

/** Rules that still apply inside a skills directory: its own files are read, but never Magpie's state or a key. */
const RULES_INSIDE: ReadonlySet<FileGuardRuleId> = new Set(["file.magpie_state", "file.sensitive_path_read"]);

/**
 * Skills: `<dir>/<folder>/SKILL.md` files, read on demand with a cache so edits are picked up without a restart.
 * A skill's text is untrusted input (anyone who can write the workspace wrote it): it is only text for the model.
 *
 * Reading a skill is a file read. A SKILL.md (or folder) that resolves outside its skills directory through a
 * symlink, or that is hard-linked, is judged by the file guard like any read; a skills directory inside the
 * workspace is judged too (the agent can replace it with a symlink). Scanning has no owner to ask, so a Warn
 * is a refusal: the folder is listed as refused with the rule ID and `invoke_skill` returns that refusal.
 * Magpie's own state is judged from its path alone and never opened (no readdir, no open).
 */
export class SkillCatalog {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly reported = new Set<string>();

  constructor(private readonly options: SkillCatalogOptions) {}

  get dirs(): string[] {
    return this.options.dirs;
  }

  /** Every skill, sorted into available, hidden, broken and refused; files that changed are judged and read again. */
  async list(): Promise<SkillListing> {
    const listing: SkillListing = { available: [], hidden: [], problems: [], refused: [] };
    const seen = new Set<string>();
    const scope = this.options.guard.scope();
    const level = this.options.guard.level();
    for (const dir of this.options.dirs) {
      const root = await this.openRoot(dir, scope, level, listing);
      if (!root) continue;
      // Judged side by side (each is a few stat and realpath calls), then taken in order.
      const results = await Promise.all(root.entries.map((entry) => this.read(root, entry, scope, level)));
      for (const parsed of results) {
        if (!parsed) continue;
        if ("rule" in parsed) {
          this.refuse(parsed, listing);
          continue;
        }
        if (!("name" in parsed)) {
          listing.problems.push(parsed);
          continue;
        }
        if (seen.has(parsed.name)) continue;
        seen.add(parsed.name);
        const missing = this.missing(parsed);
        if (missing.length > 0) listing.hidden.push({ skill: parsed, missing });
        else listing.available.push(parsed);
      }
    }
    return listing;
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
   * A skills directory's entries, or null when it is missing or refused. A directory in the workspace is judged in
   * full; one configured in `skills.dirs` is the owner's choice, judged only for Magpie's state and key files.
   */
  private async openRoot(
    dir: string,
    scope: PathScope,
    level: SecurityLevel,
    listing: SkillListing,
  ): Promise<{ dir: string; real: string; entries: string[] } | null> {
    const resolved = await resolveToolPath(dir, scope).catch(() => null);
    if (!resolved?.exists || !resolved.isDirectory) return null;
    const inWorkspace = isWithin(path.resolve(dir), path.resolve(scope.workspace));
    const findings = judgePath(resolved, "read", level, scope).filter(
      (finding) => inWorkspace || RULES_INSIDE.has(finding.rule.id),
    );
    const refusal = this.refusal(findings, dir, dir, resolved.real, false);
    if (refusal) {
      this.refuse(refusal, listing);
      return null;
    }
    try {
      return { dir, real: resolved.real, entries: (await fs.readdir(resolved.real)).sort() };
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
    let real: string;
    let stat: Stats;
    try {
      real = realpathSync.native(file);
      stat = statSync(real);
    } catch {
      this.cache.delete(file);
      return null;
    }
    // Only regular files are read (a FIFO would block, a device would never end).
    if (!stat.isFile()) return null;
    const hardLinked = stat.nlink > 1;
    let findings: GuardFinding[];
    if (!hardLinked && isWithin(real, root.real)) {
      // Inside its skills directory (the common case, checked without the full resolution): only the rules
      // that hold anywhere apply.
      const inside = { requested: file, lexical: file, real, exists: true, isDirectory: false, hardLinked };
      findings = judgePath({ ...inside, insideWorkspace: true }, "read", level, scope).filter((finding) =>
        RULES_INSIDE.has(finding.rule.id),
      );
    } else {
      // Led outside, or another name of a file that may live anywhere: judged as any file read.
      const resolved = await resolveToolPath(file, scope).catch(() => null);
      if (resolved?.real !== real) return null;
      findings = judgePath(resolved, "read", level, scope);
    }
    const refusal = this.refusal(findings, entry, file, real, hardLinked);
    if (refusal) {
      this.cache.delete(file);
      return refusal;
    }
    const cached = this.cache.get(file);
    if (
      cached &&
      cached.dev === stat.dev &&
      cached.ino === stat.ino &&
      cached.mtimeMs === stat.mtimeMs &&
      cached.size === stat.size
    )
      return cached.parsed;
    const text = await readJudged(real, stat);
    if (text === null) return null;
    const parsed = parseSkill(file, text);
    this.cache.set(file, { dev: stat.dev, ino: stat.ino, mtimeMs: stat.mtimeMs, size: stat.size, parsed });
    if (!("name" in parsed)) this.options.onProblem?.(parsed);
    return parsed;
  }

  /** The refusal for the strictest finding; Warn refuses too, as nobody can be asked while scanning. */
  private refusal(
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
 * Reads the file that was judged: opened without following a symlink and without blocking, and read only when it
 * is still the same regular file (device and inode), so a swap between the check and the open is not read.
 */
async function readJudged(real: string, judged: Stats): Promise<string | null> {
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
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
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
    return { file, error: `front matter is not valid YAML: ${(error as Error).message.split("\n")[0]}` };
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
