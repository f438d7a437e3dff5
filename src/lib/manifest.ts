import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { safeParseJson } from "./parse-json.js";

const manifestSchema = z.looseObject({ name: z.string().optional(), version: z.string().optional() });

/** A package.json's name and version (null when it is unreadable, not JSON or not an object). */
export function readManifest(file: string): { name?: string; version?: string } | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return null;
  }
  const parsed = safeParseJson(text, manifestSchema, file);
  return parsed.success ? parsed.data : null;
}

/**
 * The `version` of Magpie's package.json, found from `from` (this module by default: src/lib, dist/src/… or a
 * chunk of dist/bundle) upwards; "unknown" when there is none. `magpie version` and the dashboard show it.
 */
export function magpieVersion(from: string = import.meta.url): string {
  let directory = path.dirname(fileURLToPath(from));
  for (let depth = 0; depth < 6; depth++) {
    const manifest = readManifest(path.join(directory, "package.json"));
    if (manifest?.name === "magpie" && manifest.version) return manifest.version;
    directory = path.dirname(directory);
  }
  return "unknown";
}
