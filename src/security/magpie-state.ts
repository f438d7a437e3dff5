import { existsSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { MagpieConfig } from "../config/schema.js";
import { readManifest } from "../lib/manifest.js";
import { expandHome, isWithin } from "./paths.js";

/** Magpie's own state (DESIGN.md → Security, rule `file.magpie_state`): what the agent's tools must never reach. */
export interface MagpieStatePaths {
  /** The config file, loaded `.env` files, `dataDir` and the install directory (absolute, real where they exist). */
  protected: string[];
  /** The workspace and allowed paths: reachable even where they lie inside a protected directory. */
  exceptions: string[];
}

let installDirCache: string | undefined;

/** The directory Magpie is installed in: the nearest ancestor of this module whose package.json is Magpie's. */
export function installDir(): string {
  if (installDirCache) return installDirCache;
  let current = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (readManifest(path.join(current, "package.json"))?.name === "magpie") break;
    const parent = path.dirname(current);
    if (parent === current) {
      current = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
      break;
    }
    current = parent;
  }
  installDirCache = realOrSelf(current);
  return installDirCache;
}

function realOrSelf(target: string): string {
  try {
    // One realpath(3) call: the JavaScript realpathSync lstat()s each component of the path, and this runs for
    // every path of the state list on every turn (the skills listing's scope) and file tool call (issue 35).
    return realpathSync.native(target);
  } catch {
    return path.resolve(target);
  }
}

/** Both the given and the real form of each path, so a symlinked location matches either way. */
function bothForms(paths: Array<string | null | undefined>): string[] {
  const out = new Set<string>();
  for (const entry of paths) {
    if (!entry) continue;
    out.add(path.resolve(entry));
    out.add(realOrSelf(entry));
  }
  return [...out];
}

/** The protected paths and their exceptions for this configuration. */
export function magpieStatePaths(
  config: Pick<MagpieConfig, "sourcePath" | "envFiles" | "dataDir" | "workspace" | "tools">,
  home: string,
): MagpieStatePaths {
  return {
    protected: bothForms([config.sourcePath, ...(config.envFiles ?? []), config.dataDir, installDir()]),
    exceptions: bothForms([
      config.workspace,
      ...config.tools.files.allowedPaths.map((entry) =>
        path.resolve(config.workspace, expandHome(entry, home)),
      ),
    ]),
  };
}

/**
 * True when `candidate` (absolute) is Magpie's state: inside a protected path and not inside an exception that
 * is itself inside that protected path. The innermost match wins, so a protected file inside the workspace (a
 * `.env` that was loaded from there) stays protected.
 */
export function isMagpieState(candidate: string, paths: MagpieStatePaths): boolean {
  let depth = -1;
  let protectedMatch = false;
  for (const entry of paths.protected) {
    if (isWithin(candidate, entry) && entry.length > depth) {
      depth = entry.length;
      protectedMatch = true;
    }
  }
  if (!protectedMatch) return false;
  for (const entry of paths.exceptions) {
    if (isWithin(candidate, entry) && entry.length > depth) return false;
  }
  return true;
}
