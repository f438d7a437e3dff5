import fs from "node:fs/promises";
import path from "node:path";
import ignore, { type Ignore } from "ignore";

const IGNORE_FILES = [".gitignore", ".magpieignore"];
const ALWAYS_SKIPPED = new Set([".git"]);

export interface WalkEntry {
  /** Relative to the walk root, with forward slashes. */
  relative: string;
  absolute: string;
  kind: "file" | "directory" | "symlink" | "other";
}

interface IgnoreLayer {
  base: string;
  rules: Ignore;
}

async function loadIgnoreLayer(directory: string): Promise<IgnoreLayer | null> {
  const texts = await Promise.all(
    IGNORE_FILES.map((name) => fs.readFile(path.join(directory, name), "utf8").catch(() => "")),
  );
  const content = texts.join("\n");
  return content.trim() ? { base: directory, rules: ignore().add(content) } : null;
}

function isIgnored(layers: IgnoreLayer[], absolute: string, isDirectory: boolean): boolean {
  return layers.some((layer) => {
    const relative = path.relative(layer.base, absolute).split(path.sep).join("/");
    return relative !== "" && layer.rules.ignores(isDirectory ? `${relative}/` : relative);
  });
}

export interface WalkOptions {
  recursive: boolean;
  respectIgnore?: boolean;
  inheritedIgnoreFrom?: string[];
  /** Entries for which this returns true are neither yielded nor entered (Magpie's own state). */
  exclude?: (absolute: string) => boolean;
}

/**
 * Walks a directory tree honouring .gitignore and .magpieignore at every level (and never entering `.git`).
 * Symlinked directories are not followed, so a walk cannot leave the tree it started in.
 */
export async function* walk(
  root: string,
  options: WalkOptions = { recursive: true },
): AsyncGenerator<WalkEntry> {
  const respectIgnore = options.respectIgnore ?? true;
  const initialLayers: IgnoreLayer[] = [];
  if (respectIgnore) {
    for (const directory of options.inheritedIgnoreFrom ?? []) {
      const layer = await loadIgnoreLayer(directory);
      if (layer) initialLayers.push(layer);
    }
  }
  const stack: Array<{ directory: string; layers: IgnoreLayer[] }> = [
    { directory: root, layers: initialLayers },
  ];
  while (stack.length > 0) {
    const { directory, layers: parentLayers } = stack.pop()!;
    const own = respectIgnore ? await loadIgnoreLayer(directory) : null;
    const layers = own ? [...parentLayers, own] : parentLayers;
    const entries = await fs.readdir(directory, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => a.name.localeCompare(b.name));
    const subdirectories: string[] = [];
    for (const entry of entries) {
      if (ALWAYS_SKIPPED.has(entry.name)) continue;
      const absolute = path.join(directory, entry.name);
      if (options.exclude?.(absolute)) continue;
      const kind = entry.isSymbolicLink()
        ? "symlink"
        : entry.isDirectory()
          ? "directory"
          : entry.isFile()
            ? "file"
            : "other";
      if (respectIgnore && isIgnored(layers, absolute, kind === "directory")) continue;
      yield { relative: path.relative(root, absolute).split(path.sep).join("/"), absolute, kind };
      if (kind === "directory" && options.recursive) subdirectories.push(absolute);
    }
    for (const subdirectory of subdirectories.reverse()) stack.push({ directory: subdirectory, layers });
  }
}

/** Directories between the workspace and `root` whose ignore files also apply to a walk starting at `root`. */
export function ancestorsWithin(root: string, workspace: string): string[] {
  const relative = path.relative(workspace, root);
  if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) return [];
  const ancestors: string[] = [];
  let current = path.dirname(root);
  for (;;) {
    ancestors.unshift(current);
    if (current === workspace || path.dirname(current) === current) break;
    current = path.dirname(current);
  }
  return ancestors;
}
