import {
  appendFileSync,
  cpSync,
  existsSync,
  lstatSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { z } from "zod";

/** What `package-lock.json` says beyond the root package's own name and version, which every release bumps. */
const lockSchema = z.looseObject({
  packages: z.record(z.string(), z.looseObject({})).optional(),
});

/**
 * The dependencies `dir`'s package-lock.json pins, as one comparable string: the file without the root package's
 * version (top level and `packages[""]`), which `npm version` changes in every release while the dependency tree
 * stays the same. Null when there is no readable lock file.
 */
export function lockedDependencies(dir: string): string | null {
  let parsed: z.infer<typeof lockSchema>;
  try {
    const result = lockSchema.safeParse(
      JSON.parse(readFileSync(path.join(dir, "package-lock.json"), "utf8")),
    );
    if (!result.success) return null;
    parsed = result.data;
  } catch {
    return null;
  }
  const { version: _version, ...lock } = parsed;
  const packages = { ...lock.packages };
  const root = packages[""];
  if (root) {
    const { version: _rootVersion, ...rest } = root;
    packages[""] = rest;
  }
  return JSON.stringify({ ...lock, packages });
}

/**
 * Whether the release in `to` can use the dependencies installed in `from`: the same locked dependency tree and
 * an installed node_modules there. The release runs on the same Node as the one before, so native modules fit.
 */
export function canReuseDependencies(from: string, to: string): boolean {
  const installed = lockedDependencies(from);
  return (
    installed !== null && installed === lockedDependencies(to) && existsSync(path.join(from, "node_modules"))
  );
}

/**
 * Gives `to` the node_modules of `from` without the network: hard links (`cp -al`: no second copy on disk, fast on
 * an SD card) — safe because nothing writes a release's installed files in place (a later `npm ci` removes the
 * directory and writes new files). A full copy where hard links can't be made (another file system, a `cp`
 * without -l). A node_modules that is itself a symbolic link is linked to the same place, and kept out of git's
 * view (`node_modules/` in .gitignore matches only a directory), so the next upgrade sees no local change.
 */
export async function reuseDependencies(
  from: string,
  to: string,
): Promise<"linked" | "hard-linked" | "copied"> {
  const source = path.join(from, "node_modules");
  const target = path.join(to, "node_modules");
  rmSync(target, { recursive: true, force: true });
  if (lstatSync(source).isSymbolicLink()) {
    symlinkSync(realpathSync(source), target, "dir");
    const exclude = path.join(to, ".git", "info", "exclude");
    if (existsSync(path.dirname(exclude))) appendFileSync(exclude, "/node_modules\n");
    return "linked";
  }
  const linked = await execa("cp", ["-al", "--", source, target], { reject: false });
  if (linked.exitCode === 0) return "hard-linked";
  rmSync(target, { recursive: true, force: true });
  cpSync(source, target, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  return "copied";
}
