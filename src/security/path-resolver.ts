import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { MagpieConfig } from "../config/schema.js";
import { ToolError } from "../tools/define-tool.js";

/** A tool path after normalization: where it really lands, judged by the file guard. */
export interface ResolvedPath {
  /** What the model asked for. */
  requested: string;
  /** `~` expanded, relative made absolute against the workspace, `..` resolved (no symlinks followed). */
  lexical: string;
  /** Real path through symlinks; for a file that doesn't exist yet, its nearest existing parent's real path + the rest. */
  real: string;
  exists: boolean;
  isDirectory: boolean;
  /** Hard links > 1 on a regular file: another name for it may live anywhere on the filesystem. */
  hardLinked: boolean;
  /** Inside the workspace or an allowed path (and not under the system blocklist). */
  insideWorkspace: boolean;
}

/**
 * Directories that never count as inside the workspace, even when listed in `tools.files.allowedPaths`
 * (DESIGN.md system blocklist).
 */
export const SYSTEM_BLOCKLIST = [
  "/etc",
  "/bin",
  "/sbin",
  "/usr/bin",
  "/usr/sbin",
  "/usr/lib",
  "/boot",
  "/dev",
  "/proc",
  "/sys",
  "/lib",
  "/lib64",
  "/usr/local/bin",
  "/usr/local/sbin",
];

/** Where paths are judged from: the workspace, allowed paths and home directory. */
export interface PathScope {
  workspace: string;
  allowedPaths: string[];
  home: string;
}

export function scopeOf(config: MagpieConfig, home = os.homedir()): PathScope {
  return { workspace: config.workspace, allowedPaths: config.tools.files.allowedPaths, home };
}

/** `~` and `~/x` → the home directory. `~user` is not expanded (it stays a literal relative name). */
export function expandHome(requested: string, home: string): string {
  if (requested === "~") return home;
  if (requested.startsWith("~/")) return path.join(home, requested.slice(2));
  return requested;
}

/** True when `child` is `parent` or below it (both absolute, normalized). */
export function isWithin(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/** Real path of an existing path, or of its nearest existing ancestor joined with the missing rest. */
export async function realPathOf(absolute: string): Promise<{ real: string; exists: boolean }> {
  const missing: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      const real = await fs.realpath(current);
      return {
        real: missing.length ? path.join(real, ...missing.reverse()) : real,
        exists: missing.length === 0,
      };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A dangling symlink: realpath fails, but the link itself exists and points somewhere. Judge the target.
      if (code === "ENOENT") {
        const target = await fs.readlink(current).catch(() => null);
        if (target !== null) {
          const resolvedTarget = path.resolve(path.dirname(current), target);
          const inner = await realPathOf(resolvedTarget);
          return {
            real: missing.length ? path.join(inner.real, ...missing.reverse()) : inner.real,
            exists: false,
          };
        }
      }
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
      const parent = path.dirname(current);
      if (parent === current) return { real: absolute, exists: false };
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

async function realRoots(scope: PathScope): Promise<string[]> {
  const roots = [
    scope.workspace,
    ...scope.allowedPaths.map((entry) => path.resolve(scope.workspace, expandHome(entry, scope.home))),
  ];
  const resolved = await Promise.all(roots.map(async (root) => (await realPathOf(root)).real));
  return [...new Set([...roots.map((root) => path.resolve(root)), ...resolved])];
}

/** True when the path is under a system directory that no allowed path can open up. */
export function isBlocklisted(absolute: string): boolean {
  return SYSTEM_BLOCKLIST.some((blocked) => isWithin(absolute, blocked));
}

/** Normalizes a tool path (`~`, relative, `..`, symlinks) and decides whether it lands inside the workspace. */
export async function resolveToolPath(requested: string, scope: PathScope): Promise<ResolvedPath> {
  if (requested.includes("\0")) {
    throw new ToolError("file.invalid_path", "The path contains a NUL byte. Give a plain file path.");
  }
  const lexical = path.resolve(scope.workspace, expandHome(requested, scope.home));
  const { real, exists } = await realPathOf(lexical);
  let isDirectory = false;
  let hardLinked = false;
  if (exists) {
    const stats = await fs.stat(real);
    isDirectory = stats.isDirectory();
    hardLinked = stats.isFile() && stats.nlink > 1;
  }
  const roots = await realRoots(scope);
  const insideWorkspace =
    !hardLinked &&
    !isBlocklisted(real) &&
    !isBlocklisted(lexical) &&
    roots.some((root) => isWithin(real, root));
  return { requested, lexical, real, exists, isDirectory, hardLinked, insideWorkspace };
}

/** True when the path may be opened for reading by this process (used for clearer errors). */
export async function isReadable(file: string): Promise<boolean> {
  return fs.access(file, fsConstants.R_OK).then(
    () => true,
    () => false,
  );
}
