import { SECRET_PATHS } from "../config/env.js";
import type { MagpieConfig } from "../config/schema.js";
import { redactSecretPatterns } from "./secret-patterns.js";

const SECRET_ENV_NAME = /(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_KEY|USER_KEY|CREDENTIAL)/i;
const MIN_SECRET_LENGTH = 6;
export const REDACTED = "[REDACTED]";

/** Removes known secret values (tokens, API keys) and well-known credential formats from text and nested values. */
export class Redactor {
  private secrets: string[] = [];
  private pattern: RegExp | null = null;

  add(...values: Array<string | undefined | null>): this {
    for (const value of values) {
      if (!value || value.length < MIN_SECRET_LENGTH || this.secrets.includes(value)) continue;
      this.secrets.push(value);
    }
    // Longest first, so a secret that contains another is replaced whole.
    this.secrets.sort((a, b) => b.length - a.length);
    this.pattern = this.secrets.length
      ? new RegExp(this.secrets.map((secret) => secret.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g")
      : null;
    return this;
  }

  get size(): number {
    return this.secrets.length;
  }

  redact(text: string): string {
    const known = this.pattern ? text.replace(this.pattern, REDACTED) : text;
    return redactSecretPatterns(known, REDACTED);
  }

  /** Redacts every string inside a JSON-like value (returns a copy). */
  redactDeep<T>(value: T): T {
    if (typeof value === "string") return this.redact(value) as T;
    if (Array.isArray(value)) return value.map((item) => this.redactDeep(item)) as T;
    if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(value)) out[key] = this.redactDeep(inner);
      return out as T;
    }
    return value;
  }
}

/** A redactor loaded with the config's secret keys and secret-looking environment variables. */
export function createRedactor(config: MagpieConfig | null, env: NodeJS.ProcessEnv = process.env): Redactor {
  const redactor = new Redactor();
  if (config) {
    for (const keyPath of SECRET_PATHS) {
      let node: unknown = config;
      for (const segment of keyPath) node = (node as Record<string, unknown> | undefined)?.[segment];
      if (typeof node === "string") redactor.add(node);
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (SECRET_ENV_NAME.test(name)) redactor.add(value);
  }
  return redactor;
}

/** True for environment variable names that look like they hold secrets. */
export function isSecretEnvName(name: string): boolean {
  return SECRET_ENV_NAME.test(name);
}
