import { constants as fsConstants, type Stats } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { MagpieConfig } from "../config/schema.js";
import { ToolError } from "../core/tool-error.js";
import { errorCode } from "../lib/errors.js";
import { GUARD_PATHS, isWithin, sensitiveLocations } from "./guard-path-lists.js";
import { type MagpieStatePaths, magpieStatePaths } from "./magpie-state.js";
import { expandHome } from "./paths.js";

export { expandHome };

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
  /** For a hard-linked file: the sensitive or Magpie-state files it is another name of (same device and inode). */
  sameFileAs?: string[];
  /** Inside the workspace or an allowed path (and not under the system blocklist). */
  insideWorkspace: boolean;
}

/** Directories that never count as inside the workspace, even when listed in `tools.files.allowedPaths`. */
export const SYSTEM_BLOCKLIST: readonly string[] = GUARD_PATHS.neverInside;

/** Where paths are judged from: the workspace, allowed paths and home directory. */
export interface PathScope {
  workspace: string;
  allowedPaths: string[];
  home: string;
  /** Magpie's own state (rule `file.magpie_state`). */
  state: MagpieStatePaths;
}

/**
 * The scope of a configuration, read afresh on each call (the real paths of Magpie's state are looked up every
 * time: a path swapped for a symlink counts at once). While every field comes out the same as at the previous call
 * for that configuration, the previous object is returned (frozen, with its own copy of the allowed paths), so a consumer
 * can keep what it derived from a scope by its identity (the skills listing, issue 35 hot path).
 */
export function scopeOf(config: MagpieConfig, home = os.homedir()): PathScope {
  const state = magpieStatePaths(config, home);
  const allowedPaths = config.tools.files.allowedPaths;
  const last = lastScopes.get(config);
  if (
    last?.workspace === config.workspace &&
    last.home === home &&
    sameList(last.allowedPaths, allowedPaths) &&
    sameList(last.state.protected, state.protected) &&
    sameList(last.state.exceptions, state.exceptions)
  )
    return last;
  const scope: PathScope = Object.freeze({
    workspace: config.workspace,
    allowedPaths: [...allowedPaths],
    home,
    state: Object.freeze(state),
  });
  lastScopes.set(config, scope);
  return scope;
}

/** Each configuration's last scope (`scopeOf`). */
const lastScopes = new WeakMap<MagpieConfig, PathScope>();

function sameList(kept: readonly string[], current: readonly string[]): boolean {
  return kept.length === current.length && kept.every((entry, index) => entry === current[index]);
}

export { isWithin };

/**
 * Real path of an existing path, or of its nearest existing ancestor joined with the missing rest. The ancestor is
 * found from the root down, so the calls are as many as the existing part is deep: walking up from the end took
 * one realpath per missing component, each over the whole path (a 100 KB path of 50,000 took 13 s).
 */
export async function realPathOf(absolute: string): Promise<{ real: string; exists: boolean }> {
  try {
    return { real: await fs.realpath(absolute), exists: true };
  } catch (error) {
    const code = errorCode(error);
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  const components = absolute.split(path.sep).filter((component) => component !== "");
  let real = path.parse(absolute).root;
  for (let index = 0; index < components.length; index++) {
    const current = path.join(real, components[index]!);
    try {
      real = await fs.realpath(current);
      continue;
    } catch (error) {
      const code = errorCode(error);
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    }
    const missing = components.slice(index + 1);
    // A dangling symlink: realpath fails, but the link itself exists and points somewhere. Judge the target.
    const target = await fs.readlink(current).catch(() => null);
    if (target !== null) {
      const inner = await realPathOf(path.resolve(real, target));
      return { real: missing.length ? path.join(inner.real, ...missing) : inner.real, exists: false };
    }
    return { real: path.join(current, ...missing), exists: false };
  }
  // Every component resolved one by one though the whole path didn't (it appeared meanwhile).
  return { real, exists: true };
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
  let sameFileAs: string[] = [];
  if (exists) {
    const stats = await fs.stat(real);
    isDirectory = stats.isDirectory();
    hardLinked = stats.isFile() && stats.nlink > 1;
    if (hardLinked) sameFileAs = (await guardedNamesOf(stats, scope)).filter((other) => other !== real);
  }
  const roots = await realRoots(scope);
  const insideWorkspace =
    !hardLinked &&
    !isBlocklisted(real) &&
    !isBlocklisted(lexical) &&
    roots.some((root) => isWithin(real, root));
  return { requested, lexical, real, exists, isDirectory, hardLinked, sameFileAs, insideWorkspace };
}

/** How deep the sensitive and state directories are searched for another name of a hard-linked file. */
const ALIAS_SEARCH_DEPTH = 3;
/** At most this many files are compared, so a huge directory can't stall a call. */
const ALIAS_SEARCH_BUDGET = 4000;
const ALIAS_SEARCH_SKIPPED = new Set(["node_modules", ".git"]);

/**
 * The sensitive and Magpie-state files that are the same file (device and inode) as `target`: a hard link in the
 * workspace to `~/.aws/credentials` or to the config is judged as that file.
 */
async function guardedNamesOf(target: Stats, scope: PathScope): Promise<string[]> {
  const sensitive = sensitiveLocations(scope.home);
  const budget = { left: ALIAS_SEARCH_BUDGET };
  const files: string[] = [];
  for (const root of new Set([...sensitive.files, ...sensitive.directories]))
    await collectFiles(root, ALIAS_SEARCH_DEPTH, [], budget, files);
  for (const root of new Set(scope.state.protected)) {
    // As in isMagpieState: only a workspace or allowed path strictly inside the protected path opens it up.
    const inside = scope.state.exceptions.filter((entry) => entry !== root && isWithin(entry, root));
    await collectFiles(root, ALIAS_SEARCH_DEPTH, inside, budget, files);
  }
  const matches = await Promise.all(
    files.map(async (file) => {
      const stats = await fs.stat(file).catch(() => null);
      return stats && stats.dev === target.dev && stats.ino === target.ino ? file : null;
    }),
  );
  return [...new Set(matches.filter((file): file is string => file !== null))];
}

async function collectFiles(
  entry: string,
  depth: number,
  exceptions: string[],
  budget: { left: number },
  out: string[],
): Promise<void> {
  if (budget.left <= 0) return;
  // Followed: `~/.aws` may itself be a symlink; the depth limit ends any loop.
  const stats = await fs.stat(entry).catch(() => null);
  if (!stats) return;
  if (stats.isFile()) {
    budget.left--;
    out.push(entry);
    return;
  }
  // The workspace inside dataDir is the agent's own: its files stand for nothing guarded.
  if (!stats.isDirectory() || depth <= 0 || exceptions.some((exception) => isWithin(entry, exception)))
    return;
  const children = await fs.readdir(entry).catch(() => [] as string[]);
  for (const child of children) {
    if (ALIAS_SEARCH_SKIPPED.has(child)) continue;
    await collectFiles(path.join(entry, child), depth - 1, exceptions, budget, out);
  }
}

/** True when the path may be opened for reading by this process (used for clearer errors). */
export async function isReadable(file: string): Promise<boolean> {
  return fs.access(file, fsConstants.R_OK).then(
    () => true,
    () => false,
  );
}
