import { type Logger, pino } from "pino";
import type { Redactor } from "../security/redact.js";

export type { Logger };

export interface LoggerOptions {
  level?: string;
  redactor?: Redactor;
  /** Pretty, colored lines (default: when stdout is a TTY). */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

/** pino logger: JSON lines, or pretty output in a terminal; secrets redacted from every line. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? "info";
  const redactor = options.redactor;
  const pretty = options.pretty ?? Boolean(process.stdout.isTTY);
  const pinoOptions = {
    level,
    base: undefined,
    redact: {
      paths: ["token", "apiKey", "*.token", "*.apiKey", "*.botToken", "*.appToken", "*.signingSecret", "raw"],
      censor: "[REDACTED]",
    },
    hooks: redactor
      ? {
          logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void) {
            method.apply(
              this,
              args.map((arg) => (typeof arg === "string" ? redactor.redact(arg) : arg)),
            );
          },
        }
      : undefined,
    formatters: redactor
      ? {
          log: (object: Record<string, unknown>) => redactor.redactDeep(serializeErrors(object)),
        }
      : undefined,
  };
  if (pretty && !options.destination) {
    // Synchronous in-process pretty printing: no worker thread on a small box.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const stream = loadPretty();
    if (stream) return pino(pinoOptions, stream);
  }
  return options.destination ? pino(pinoOptions, options.destination as never) : pino(pinoOptions);
}

function serializeErrors(object: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    out[key] =
      value instanceof Error ? { type: value.name, message: value.message, stack: value.stack } : value;
  }
  return out;
}

let prettyFactory: ((options: object) => NodeJS.WritableStream) | null | undefined;

function loadPretty(): NodeJS.WritableStream | null {
  if (prettyFactory === undefined) {
    try {
      prettyFactory = createRequireSafe()("pino-pretty") as (options: object) => NodeJS.WritableStream;
    } catch {
      prettyFactory = null;
    }
  }
  return prettyFactory
    ? prettyFactory({ colorize: true, translateTime: "HH:MM:ss", ignore: "pid,hostname" })
    : null;
}

import { createRequire } from "node:module";

function createRequireSafe(): NodeJS.Require {
  return createRequire(import.meta.url);
}

/** A logger that writes nothing (tests, CLI sub-commands). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
