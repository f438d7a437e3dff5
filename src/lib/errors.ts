/** Errors with a machine-readable `code`; messages name the value and the fix. */
export class MagpieError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "MagpieError";
    this.code = code;
  }
}

/** A failed platform send. `retryAfterMs` honours 429s; `permanent` stops retrying (400, 403 …). */
export class ChannelSendError extends MagpieError {
  readonly retryAfterMs?: number;
  readonly permanent: boolean;
  constructor(
    message: string,
    fields: { code?: string; retryAfterMs?: number; permanent?: boolean; cause?: unknown } = {},
  ) {
    super(fields.code ?? "channel.send_failed", message, { cause: fields.cause });
    this.name = "ChannelSendError";
    this.retryAfterMs = fields.retryAfterMs;
    this.permanent = fields.permanent ?? false;
  }
}

/** Bad configuration found at startup; the message names the key and the fix. */
export class ConfigError extends MagpieError {
  readonly problems: string[];
  constructor(problems: string[]) {
    super("config.invalid", `Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The `code` of a Node system error (ENOENT, EPERM, …), or undefined for anything else. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}
