import { accessSync, constants, readdirSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";

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

export interface SkillListing {
  /** Skills whose required programs and variables are present. */
  available: Skill[];
  /** Skills hidden because something they require is missing, with what. */
  hidden: Array<{ skill: Skill; missing: string[] }>;
  problems: SkillProblem[];
}

interface CacheEntry {
  mtimeMs: number;
  size: number;
  parsed: Skill | SkillProblem;
}

export interface SkillCatalogOptions {
  /** Searched in order; the first skill of a name wins. */
  dirs: string[];
  env?: NodeJS.ProcessEnv;
  /** Called once per broken file version. */
  onProblem?(problem: SkillProblem): void;
}

/**
 * Skills: `<dir>/<folder>/SKILL.md` files, read on demand with an mtime cache so edits are picked up without a
 * restart. A skill's text is untrusted input (anyone who can write the workspace wrote it): it is only text for
 * the model.
 */
export class SkillCatalog {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(private readonly options: SkillCatalogOptions) {}

  get dirs(): string[] {
    return this.options.dirs;
  }

  list(): SkillListing {
    const listing: SkillListing = { available: [], hidden: [], problems: [] };
    const seen = new Set<string>();
    for (const file of this.files()) {
      const parsed = this.read(file);
      if (!parsed) continue;
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
    return listing;
  }

  /** An available skill by name (case-insensitive). */
  get(name: string): Skill | undefined {
    const wanted = name.trim().toLowerCase();
    return this.list().available.find((skill) => skill.name.toLowerCase() === wanted);
  }

  private files(): string[] {
    const files: string[] = [];
    for (const dir of this.options.dirs) {
      let entries: string[];
      try {
        entries = readdirSync(dir).sort();
      } catch {
        continue;
      }
      for (const entry of entries) files.push(path.join(dir, entry, "SKILL.md"));
    }
    return files;
  }

  private read(file: string): Skill | SkillProblem | null {
    let stat: ReturnType<typeof statSync>;
    try {
      stat = statSync(file);
    } catch {
      this.cache.delete(file);
      return null;
    }
    if (!stat.isFile()) return null;
    const cached = this.cache.get(file);
    if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached.parsed;
    const parsed = parseSkill(file, readFileSync(file, "utf8"));
    this.cache.set(file, { mtimeMs: stat.mtimeMs, size: stat.size, parsed });
    if (!("name" in parsed)) this.options.onProblem?.(parsed);
    return parsed;
  }

  private missing(skill: Skill): string[] {
    const env = this.options.env ?? process.env;
    return [
      ...skill.requires.bins.filter((bin) => !onPath(bin, env.PATH)).map((bin) => `program ${bin}`),
      ...skill.requires.env.filter((name) => !env[name]).map((name) => `variable ${name}`),
    ];
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
