import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The `version` of Magpie's package.json, found from this module up (src/dashboard, dist/src/… or a chunk of
 * dist/bundle), as `magpie version` finds it; "unknown" when there is none.
 */
export function magpieVersion(from: string = import.meta.url): string {
  let directory = path.dirname(fileURLToPath(from));
  for (let depth = 0; depth < 6; depth++) {
    const file = path.join(directory, "package.json");
    if (existsSync(file)) {
      try {
        const manifest = JSON.parse(readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
        if (manifest.name === "magpie" && typeof manifest.version === "string") return manifest.version;
      } catch {
        // Not ours or unreadable: keep looking upwards.
      }
    }
    directory = path.dirname(directory);
  }
  return "unknown";
}
