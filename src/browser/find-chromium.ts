import { accessSync, constants } from "node:fs";
import path from "node:path";

/** Looked up on the PATH in this order when `browser.executablePath` is not set. */
export const CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome"] as const;

/** The first executable named `names` on `searchPath`, or null. */
export function findOnPath(names: readonly string[], searchPath = process.env.PATH ?? ""): string | null {
  for (const name of names) {
    for (const dir of searchPath.split(path.delimiter).filter(Boolean)) {
      const candidate = path.join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // Not here; keep looking.
      }
    }
  }
  return null;
}

/** The Chromium to launch: the configured one, else the first of CHROMIUM_NAMES on the PATH. */
export function findChromium(configured: string | undefined): string | null {
  return configured ?? findOnPath(CHROMIUM_NAMES);
}
