import { isDeepStrictEqual } from "node:util";
import type { MagpieConfig } from "./schema.js";

/**
 * What a reload changes: the key paths whose value differs between the running config and the new file. Paths are
 * dotted down to the first array or leaf value (`channels.telegram.allowFrom`, `cron.jobs`, `mcpServers.files`).
 */
export interface ConfigChange {
  previous: MagpieConfig;
  next: MagpieConfig;
  /** Changed key paths, sorted. */
  paths: string[];
  /** Whether anything at or under `prefix` (a dotted key path) changed. */
  touches(prefix: string): boolean;
}

/**
 * Keys a running Magpie can't take over: it keeps its value and says a restart is needed. Everything else is
 * applied live by the core and the features' `reload` hooks (src/app/app.ts → reload).
 */
export const RESTART_ONLY_KEYS = ["dataDir", "workspace", "http.host", "http.port", "sourcePath", "envFiles"];

export function isRestartOnly(keyPath: string): boolean {
  return RESTART_ONLY_KEYS.some((key) => keyPath === key || keyPath.startsWith(`${key}.`));
}

export function diffConfig(previous: MagpieConfig, next: MagpieConfig): ConfigChange {
  const paths: string[] = [];
  collect(previous, next, "", paths);
  paths.sort();
  return {
    previous,
    next,
    paths,
    touches: (prefix) => paths.some((changed) => changed === prefix || changed.startsWith(`${prefix}.`)),
  };
}

function collect(before: unknown, after: unknown, prefix: string, into: string[]): void {
  if (isPlainObject(before) && isPlainObject(after)) {
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      collect(before[key], after[key], prefix ? `${prefix}.${key}` : key, into);
    }
    return;
  }
  if (!isDeepStrictEqual(before, after)) into.push(prefix || "(root)");
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
