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
 * applied live by the core and the features' `reload` hooks (src/app/app.ts → reload). Each entry is here for a
 * reason: what reads it built something from it once, at start-up.
 */
export const RESTART_ONLY_KEYS = [
  // Where the database, the workspace and the pid file live; where the config file was found (not a key the owner
  // writes: never reported).
  "dataDir",
  "workspace",
  "sourcePath",
  // Budget periods, the scheduler, the dashboard and the prompt's clock line took the zone at start-up.
  "timezone",
  // The listening socket, the dashboard's and metrics' routes and the event-loop watchdog are set up once.
  "http",
  // The chat model chain (client, fallbacks, cool-downs) and the media preparer are built at start-up; prices and
  // text tool calls are read at each call.
  "llm.baseUrl",
  "llm.apiKey",
  "llm.model",
  "llm.embeddingModel",
  "llm.timeoutMs",
  "llm.maxRetries",
  "llm.fallbacks",
  "llm.cooldownSecs",
  "llm.schemaDialect",
  "llm.vision",
  "llm.transcriptionModel",
  // The turn slots are one semaphore; memory's recall budget is taken when its hooks are made.
  "agent.maxConcurrentTurns",
  "agent.recall",
  // The phone notifier is built once and shared by the scheduler, budgets, alerts and triggers.
  "notify",
  // Pin watches, the browser service, the screenshot service, Composio and voice replies start with the process.
  "hardware",
  "browser",
  "screenshot",
  "composio",
  "voice",
  // The daily clean-up is scheduled at start with its targets.
  "retention",
  // The SSRF-safe HTTP client is made once with the allowed private hosts.
  "security.ssrf",
  // The skill catalog is built on its directories once (skills.requireApproval is read at each use).
  "skills.dirs",
  // The spill store and the sandbox probe are made once.
  "tools.spillThresholdChars",
  "tools.shell.sandbox",
];

export function isRestartOnly(keyPath: string): boolean {
  return RESTART_ONLY_KEYS.some((key) => keyPath === key || keyPath.startsWith(`${key}.`));
}

/**
 * `next` with every restart-only key set back to its running value (the sections on the way copied, never edited):
 * what a reload applies.
 */
export function withRestartOnlyKept(running: MagpieConfig, next: MagpieConfig): MagpieConfig {
  const result = { ...next } as unknown as Record<string, unknown>;
  for (const keyPath of RESTART_ONLY_KEYS) {
    const segments = keyPath.split(".");
    let from: unknown = running;
    let into = result;
    for (const [index, segment] of segments.entries()) {
      from = isPlainObject(from) ? from[segment] : undefined;
      if (index === segments.length - 1) {
        if (from === undefined) delete into[segment];
        else into[segment] = from;
        break;
      }
      const inner = into[segment];
      if (!isPlainObject(inner) && !isPlainObject(from)) break;
      const copy = isPlainObject(inner) ? { ...inner } : {};
      into[segment] = copy;
      into = copy;
    }
  }
  return result as unknown as MagpieConfig;
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
