import { createRequire } from "node:module";
import { Writable } from "node:stream";
import { type Logger, type LoggerOptions as PinoOptions, pino } from "pino";
import { revealInvisible } from "../lib/reveal-invisible.js";
import { Redactor } from "./redact.js";

export type { Logger };

export interface LoggerOptions {
  level?: string;
  /** Secret values to remove from every line (an empty redactor when omitted). */
  redactor?: Redactor;
  /** Pretty lines, colored on stdout (default: when no destination is given and stdout is a TTY). */
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
  const pretty = options.pretty ?? (!options.destination && Boolean(process.stdout.isTTY));
  const stream = pretty ? prettyStream(options.destination) : null;
  if (stream) return pino(pinoOptions, stream);
  if (options.destination) return pino(pinoOptions, options.destination as never);
  return pino(pinoOptions);
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

/**
 * Synchronous in-process pretty printing (no worker thread on a small box); loaded only in a terminal. A terminal
 * acts on what pino-pretty prints raw (the message, top-level strings, child bindings): each line's values pass
 * through `revealInvisible` first, so control, invisible and bidirectional characters from a guest's words or a
 * tool name the model made up show as ⟦U+XXXX⟧ instead of clearing the screen or writing the clipboard. JSON
 * lines (journald, files, tools) keep the values; JSON escapes C0.
 */
function prettyStream(destination?: NodeJS.WritableStream): NodeJS.WritableStream | null {
  let format: (line: object) => string;
  try {
    const { prettyFactory } = createRequire(import.meta.url)("pino-pretty") as {
      prettyFactory: (options: object) => (line: object) => string;
    };
    format = prettyFactory({
      colorize: destination === undefined,
      translateTime: "HH:MM:ss",
      ignore: "pid,hostname",
    });
  } catch {
    return null;
  }
  const output = destination ?? process.stdout;
  return new Writable({
    write(chunk, _encoding, done) {
      // pino writes one line per call.
      const line = String(chunk);
      let record: unknown;
      try {
        record = JSON.parse(line);
      } catch {
        record = null;
      }
      output.write(record && typeof record === "object" ? format(revealDeep(record)) : revealInvisible(line));
      done();
    },
  });
}

/** Every string in plain data (keys too) with `revealInvisible` applied. */
function revealDeep<T>(value: T): T {
  if (typeof value === "string") return revealInvisible(value) as T;
  if (Array.isArray(value)) return value.map((item) => revealDeep(item)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[revealInvisible(key)] = revealDeep(inner);
    return out as T;
  }
  return value;
}

/** A logger that writes nothing (tests, CLI sub-commands). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
