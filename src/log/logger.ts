import { createRequire } from "node:module";
import { type Logger, type LoggerOptions as PinoOptions, pino } from "pino";
import { Redactor } from "../security/redact.js";

export type { Logger };

export interface LoggerOptions {
  level?: string;
  /** Secret values to remove from every line (an empty redactor when omitted). */
  redactor?: Redactor;
  /** Pretty, colored lines (default: when stdout is a TTY). */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

/** pino logger: JSON lines, or pretty output in a terminal; secrets redacted from every line. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const redactor = options.redactor ?? new Redactor();
  const pinoOptions: PinoOptions = {
    level: options.level ?? process.env.LOG_LEVEL ?? "info",
    base: undefined,
    redact: {
      paths: ["token", "apiKey", "*.token", "*.apiKey", "*.botToken", "*.appToken", "*.signingSecret", "raw"],
      censor: "[REDACTED]",
    },
    hooks: {
      logMethod(args, method) {
        const cleaned = args.map((arg) => (typeof arg === "string" ? redactor.redact(arg) : arg));
        method.apply(this, cleaned as Parameters<typeof method>);
      },
    },
    formatters: {
      log: (object) => redactor.redactDeep(serializeErrors(object)),
    },
  };
  if (options.destination) return pino(pinoOptions, options.destination as never);
  const pretty = options.pretty ?? Boolean(process.stdout.isTTY);
  const stream = pretty ? prettyStream() : null;
  return stream ? pino(pinoOptions, stream) : pino(pinoOptions);
}

/** Error objects as plain data, so the redactor can reach their messages. */
function serializeErrors(object: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    out[key] =
      value instanceof Error ? { type: value.name, message: value.message, stack: value.stack } : value;
  }
  return out;
}

/** Synchronous in-process pretty printing (no worker thread on a small box); loaded only in a terminal. */
function prettyStream(): NodeJS.WritableStream | null {
  try {
    const pretty = createRequire(import.meta.url)("pino-pretty") as (
      options: object,
    ) => NodeJS.WritableStream;
    return pretty({ colorize: true, translateTime: "HH:MM:ss", ignore: "pid,hostname" });
  } catch {
    return null;
  }
}

/** A logger that writes nothing (tests, CLI sub-commands). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
