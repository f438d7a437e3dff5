import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseDotenv } from "dotenv";
import { parseDocument } from "yaml";
import { CHANNEL_ENTRIES, sectionOf } from "../../channels/catalog.js";
import { ConfigError } from "../lib/errors.js";
import { ENV_FALLBACKS } from "./env.js";
import { formatConfigIssues, formatKeyPath } from "./errors.js";
import { configSchema, type MagpieConfig } from "./schema.js";

export const DEFAULT_CONFIG_PATH = "config/magpie.yaml";

export interface LoadConfigOptions {
  /** Explicit `--config` path. */
  configPath?: string;
  /** Environment to read (`process.env` by default; `.env` values fill gaps). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Load `.env` from `cwd` (default true). */
  loadDotenv?: boolean;
}

/** Reads `.env` into the environment without overriding variables that are already set; returns the file read. */
export function loadDotenvFile(cwd: string, env: NodeJS.ProcessEnv): string | null {
  const file = path.join(cwd, ".env");
  if (!existsSync(file)) return null;
  const values = parseDotenv(readFileSync(file));
  for (const [key, value] of Object.entries(values)) {
    if (env[key] === undefined) env[key] = value;
  }
  return path.resolve(file);
}

/** Loads, interpolates and validates the configuration; throws ConfigError listing every problem. */
export function loadConfig(options: LoadConfigOptions = {}): MagpieConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const envFile = options.loadDotenv !== false ? loadDotenvFile(cwd, env) : null;

  const explicit = options.configPath ?? env.MAGPIE_CONFIG;
  const sourcePath = path.resolve(cwd, explicit ?? DEFAULT_CONFIG_PATH);
  let raw: unknown = {};
  let fromFile = false;
  if (existsSync(sourcePath)) {
    raw = parseYaml(readFileSync(sourcePath, "utf8"), sourcePath);
    fromFile = true;
  } else if (explicit) {
    throw new ConfigError([
      `${explicit}: config file not found — check the path given to --config or MAGPIE_CONFIG, or copy config/magpie.example.yaml there.`,
    ]);
  }
  return parseConfig(raw, {
    env,
    cwd,
    sourcePath: fromFile ? sourcePath : null,
    envFiles: envFile ? [envFile] : [],
  });
}

/** Validates an already-parsed config object (interpolation and env fallbacks included). */
export function parseConfig(
  raw: unknown,
  context: { env?: NodeJS.ProcessEnv; cwd?: string; sourcePath?: string | null; envFiles?: string[] } = {},
): MagpieConfig {
  const env = context.env ?? process.env;
  const cwd = context.cwd ?? process.cwd();
  const problems: string[] = [];
  const root = raw ?? {};
  if (typeof root !== "object" || Array.isArray(root)) {
    throw new ConfigError([
      "(root): the config file must be a YAML mapping of keys (see config/magpie.example.yaml).",
    ]);
  }
  const interpolated = interpolate(root, [], env, problems) as Record<string, unknown>;
  applyEnvFallbacks(interpolated, env);

  const result = configSchema.safeParse(interpolated, { reportInput: true });
  if (!result.success) problems.push(...formatConfigIssues(configSchema, result.error.issues));
  if (problems.length > 0 || !result.success) throw new ConfigError(problems);

  const parsed = result.data;
  const dataDir = path.resolve(cwd, parsed.dataDir);
  const config: MagpieConfig = {
    ...parsed,
    dataDir,
    workspace: path.resolve(cwd, parsed.workspace ?? path.join(dataDir, "workspace")),
    timezone: parsed.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? "UTC",
    sourcePath: context.sourcePath ?? null,
    envFiles: context.envFiles ?? [],
  };
  const semantic = checkSemantics(config);
  if (semantic.length > 0) throw new ConfigError(semantic);
  return config;
}

function parseYaml(text: string, file: string): unknown {
  const document = parseDocument(text, { prettyErrors: true });
  if (document.errors.length > 0) {
    throw new ConfigError(
      document.errors.map((error) => `${file}: YAML syntax error — ${error.message.split("\n")[0]}`),
    );
  }
  return document.toJS() ?? {};
}

// regex-input-bounded: the owner's own config file, read once at start-up
const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replaces `${VAR}` and `${VAR:-default}` in every string; unset variables are reported by key path. */
function interpolate(
  value: unknown,
  keyPath: PropertyKey[],
  env: NodeJS.ProcessEnv,
  problems: string[],
): unknown {
  if (typeof value === "string") {
    const result = value.replace(VARIABLE, (match, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (found !== undefined && found !== "") return found;
      if (fallback !== undefined) return fallback;
      problems.push(
        `${formatKeyPath(keyPath)}: environment variable ${name} is not set (referenced as ${match}) — set it in .env or the environment, or write \${${name}:-default}.`,
      );
      return "";
    });
    // `${VAR:-}` that comes out empty means "not set", so the key's default (or env fallback) applies.
    return result === "" && value !== "" ? undefined : result;
  }
  if (Array.isArray(value))
    return value.map((item, index) => interpolate(item, [...keyPath, index], env, problems));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      // A key with nothing after it (`console:` in YAML) is null: treat it as not set.
      const resolved = inner === null ? undefined : interpolate(inner, [...keyPath, key], env, problems);
      if (resolved !== undefined) out[key] = resolved;
    }
    return out;
  }
  return value;
}

function applyEnvFallbacks(root: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  for (const { env: name, path: keyPath, number } of ENV_FALLBACKS) {
    const value = env[name];
    if (value === undefined || value === "") continue;
    let node: Record<string, unknown> = root;
    let blocked = false;
    for (const segment of keyPath.slice(0, -1)) {
      const next = node[segment];
      if (next === undefined || next === null) node[segment] = {};
      else if (typeof next !== "object" || Array.isArray(next)) {
        blocked = true; // the schema will report the wrong type
        break;
      }
      node = node[segment] as Record<string, unknown>;
    }
    const last = keyPath[keyPath.length - 1]!;
    if (!blocked && (node[last] === undefined || node[last] === null || node[last] === ""))
      node[last] = number && /^\d+$/.test(value) ? Number(value) : value;
  }
}

/** Cross-key rules zod alone can't express. */
function checkSemantics(config: MagpieConfig): string[] {
  const problems: string[] = [];
  const agentNames = Object.keys(config.agents ?? {});
  config.routes.forEach((route, index) => {
    if (route.agent !== "main" && !agentNames.includes(route.agent)) {
      problems.push(
        `routes[${index}].agent: unknown agent "${route.agent}" — define it under agents: or use one of ${agentNames.join(", ") || "main"}.`,
      );
    }
  });
  for (const entry of CHANNEL_ENTRIES) {
    problems.push(...(entry.configProblems?.(sectionOf(config, entry)) ?? []));
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: config.timezone });
  } catch {
    problems.push(
      `timezone: unknown time zone "${config.timezone}" — use an IANA name like Europe/Berlin or UTC.`,
    );
  }
  return problems;
}
