import { readFileSync } from "node:fs";
import { parse as parseDotenv } from "dotenv";
import { SECRET_PATHS } from "../config/env.js";
import type { MagpieConfig } from "../config/schema.js";
import { redactSecretPatterns } from "./secret-patterns.js";

const SECRET_ENV_NAME =
  /(TOKEN|SECRET|PASSWORD|PASSWD|(^|_)PASS(_|$)|_PWD$|API_?KEY|PRIVATE_KEY|USER_KEY|CREDENTIAL)/i;
const MIN_SECRET_LENGTH = 6;
export const REDACTED = "[REDACTED]";
/**
 * One run of base64/hex characters. Runs continued over line breaks are joined in code, not by a regex: a
 * pattern like `run(?:\r?\n run)+` backtracks through every long run not followed by a line break, quadratic in
 * its length (40 KB took 2.7 s).
 */
const RUN = /[\w+/=-]+/g;

/** How a form of a secret is written (`secretForms`); the output filter names it in a refusal. */
export type SecretEncoding = "plain" | "reversed" | "hex" | "base64" | "base64url";

/** A secret as it may appear in text, and how it was encoded. */
export interface SecretForm {
  text: string;
  encoding: SecretEncoding;
}

/**
 * The forms a secret is caught in, itself first: reversed, hex (lower and upper case) and the base64 and
 * base64url runs it produces at each of the three byte alignments inside a longer encoded stream (the
 * characters that also depend on neighbouring bytes are left out, and padding never matters).
 */
export function secretForms(secret: string): SecretForm[] {
  const bytes = Buffer.from(secret, "utf8");
  const forms: SecretForm[] = [
    { text: secret, encoding: "plain" },
    { text: [...secret].reverse().join(""), encoding: "reversed" },
    { text: bytes.toString("hex"), encoding: "hex" },
    { text: bytes.toString("hex").toUpperCase(), encoding: "hex" },
  ];
  for (const offset of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
    // Characters made only of the secret's bits: skip those sharing bits with the `offset` bytes before it,
    // stop before the one sharing bits with whatever follows.
    const first = Math.ceil((offset * 8) / 6);
    const end = Math.floor(((offset + bytes.length) * 8) / 6);
    const core = encoded.slice(first, end);
    forms.push({ text: core, encoding: "base64" });
    forms.push({ text: core.replaceAll("+", "-").replaceAll("/", "_"), encoding: "base64url" });
  }
  return forms.filter((form) => form.encoding === "plain" || form.text.length >= MIN_SECRET_LENGTH);
}

/** The forms of `secretForms` other than the secret itself, each once. */
export function encodedForms(secret: string): string[] {
  const forms = new Set(secretForms(secret).map((form) => form.text));
  forms.delete(secret);
  return [...forms];
}

/**
 * Removes known secret values (tokens, API keys, passwords) and well-known credential formats from text and
 * nested values — also their base64, base64url, hex and reversed forms. A last line of defence: the sandbox
 * keeps the agent from reading secrets; this catches what slips into output, logs and LLM requests anyway.
 */
export class Redactor {
  private secrets: string[] = [];
  /** Every form to replace, secrets and their encodings, precomputed once per `add`. */
  private forms: string[] = [];
  private pattern: RegExp | null = null;

  add(...values: Array<string | undefined | null>): this {
    let changed = false;
    for (const value of values) {
      if (!value || value.length < MIN_SECRET_LENGTH || this.secrets.includes(value)) continue;
      this.secrets.push(value);
      this.forms.push(value, ...encodedForms(value));
      changed = true;
    }
    if (!changed) return this;
    // Longest first, so a form that contains another is replaced whole.
    this.forms = [...new Set(this.forms)].sort((a, b) => b.length - a.length);
    // regex-dynamic: an alternation of escaped literals, the secrets and their encoded forms
    this.pattern = new RegExp(this.forms.map(escapeRegExp).join("|"), "g");
    return this;
  }

  get size(): number {
    return this.secrets.length;
  }

  /** The secret values themselves, in the order added (the output filter builds its own matcher from them). */
  secretValues(): readonly string[] {
    return this.secrets;
  }

  redact(text: string): string {
    const pattern = this.pattern;
    let known = text;
    if (pattern) {
      known = text.replace(pattern, REDACTED);
      // An encoded run may be wrapped (`base64` breaks lines at 76 columns, `fold` anywhere): runs that continue
      // across line breaks are checked joined, and replaced joined when they hide a secret.
      if (known.includes("\n")) {
        known = replaceWrappedRuns(known, (run) => {
          const joined = run.replace(/\r?\n/g, "");
          pattern.lastIndex = 0;
          return pattern.test(joined) ? joined.replace(pattern, REDACTED) : run;
        });
      }
    }
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

/**
 * Replaces each stretch of runs continued over single line breaks (`run\nrun\r\nrun`, as `base64` and `fold`
 * wrap) with `replace(stretch)`; one pass over the text.
 */
function replaceWrappedRuns(text: string, replace: (stretch: string) => string): string {
  const parts: string[] = [];
  let copied = 0;
  let start = -1;
  let end = -1;
  let runs = 0;
  const flush = (): void => {
    if (runs < 2) return;
    parts.push(text.slice(copied, start), replace(text.slice(start, end)));
    copied = end;
  };
  RUN.lastIndex = 0;
  for (let match = RUN.exec(text); match; match = RUN.exec(text)) {
    const gap = match.index - end;
    const continues =
      runs > 0 &&
      ((gap === 1 && text[end] === "\n") || (gap === 2 && text[end] === "\r" && text[end + 1] === "\n"));
    if (continues) runs++;
    else {
      flush();
      start = match.index;
      runs = 1;
    }
    end = match.index + match[0].length;
  }
  flush();
  if (copied === 0) return text;
  parts.push(text.slice(copied));
  return parts.join("");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The secrets among environment-style variables: values of secret-looking names, and passwords inside URL
 * values under any name (`DATABASE_URL=postgres://user:pass@host/db` → `pass`).
 */
export function secretsOfVariables(variables: Record<string, string | undefined>): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(variables)) {
    if (!value) continue;
    if (SECRET_ENV_NAME.test(name)) found.push(value);
    found.push(...urlPasswords(value));
  }
  return found;
}

/** Passwords of `scheme://user:password@host` URLs inside a value (percent-decoded form too). */
function urlPasswords(value: string): string[] {
  const passwords: string[] = [];
  // regex-input-bounded: values of environment and .env variables, the owner's own configuration
  for (const match of value.matchAll(/[a-z][a-z0-9+.-]*:\/\/[^\s:@/]*:([^\s@/]+)@/gi)) {
    const password = match[1]!;
    passwords.push(password);
    try {
      const decoded = decodeURIComponent(password);
      if (decoded !== password) passwords.push(decoded);
    } catch {
      // Not valid percent-encoding: the raw form is enough.
    }
  }
  return passwords;
}

/** Variables of the `.env` files the config loaded (unreadable files are skipped: they were read at start). */
function dotenvVariables(files: readonly string[]): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const file of files) {
    try {
      Object.assign(variables, parseDotenv(readFileSync(file)));
    } catch {
      // Gone since start-up: nothing to add.
    }
  }
  return variables;
}

/**
 * A redactor loaded with the config's secret keys, and the secrets among the process environment, the loaded
 * `.env` files and `mcpServers.*.env` (secret-looking names and passwords inside URLs). Given `into`, adds them to
 * that one (a config reload: new secrets join, old ones stay hidden).
 */
export function createRedactor(
  config: MagpieConfig | null,
  env: NodeJS.ProcessEnv = process.env,
  into: Redactor = new Redactor(),
): Redactor {
  const redactor = into;
  const values: string[] = [];
  if (config) {
    for (const keyPath of SECRET_PATHS) {
      let nodes: unknown[] = [config];
      for (const segment of keyPath) {
        nodes = nodes.flatMap((node) => {
          if (!node || typeof node !== "object") return [];
          return segment === "*" ? Object.values(node) : [(node as Record<string, unknown>)[segment]];
        });
      }
      for (const node of nodes) if (typeof node === "string") values.push(node);
    }
    values.push(...secretsOfVariables(dotenvVariables(config.envFiles ?? [])));
    for (const server of Object.values(config.mcpServers ?? {}))
      values.push(...secretsOfVariables(server.env));
  }
  values.push(...secretsOfVariables(env));
  return redactor.add(...values);
}

/** True for environment variable names that look like they hold secrets. */
export function isSecretEnvName(name: string): boolean {
  return SECRET_ENV_NAME.test(name);
}
