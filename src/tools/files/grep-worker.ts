import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * The worker's code, plain JavaScript run with `eval: true`: the bundle then needs no separate worker file (a
 * file esbuild doesn't know to emit would be missing from dist/bundle). It compiles the pattern once with RE2
 * (re2js, loaded by the absolute path the main thread resolved, since an eval'd worker resolves from the
 * process's working directory) and, for each file's bytes it is sent, answers the matching lines up to the
 * limit it is given.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { RE2JS } = require(workerData.re2js);
const regex = RE2JS.compile(workerData.pattern, workerData.ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
parentPort.on("message", ({ bytes, limit }) => {
  const lines = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8").split("\\n");
  const matches = [];
  let more = false;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index];
    if (!regex.test(line)) continue;
    if (matches.length >= limit) {
      more = true;
      break;
    }
    matches.push({
      line: index + 1,
      text: line.length > workerData.maxLineChars ? line.slice(0, workerData.maxLineChars) + "\\u2026" : line,
    });
  }
  parentPort.postMessage({ matches, more });
});
`;

/** One matching line of a file. */
export interface GrepLine {
  line: number;
  text: string;
}

/** Why a search stopped early: the pattern ran past the time limit, or the call was aborted. */
export class GrepStopped extends Error {
  constructor(readonly reason: "timeout" | "aborted") {
    super(reason);
  }
}

/** Where re2js's CommonJS entry is, for the worker to require. */
const RE2JS_PATH = createRequire(import.meta.url).resolve("re2js");

/**
 * Runs a model's regex off the event loop. RE2 matches in time linear in the text (`(a+)+$` on a long line
 * answers at once), but that time also grows with the pattern's automaton — a pattern built to defeat RE2's
 * cache can still spend seconds on a megabyte — so the worker is also terminated when the time spent matching
 * passes `timeLimitMs` in total. Call with a pattern `re2Pattern` accepted.
 */
export class GrepWorker {
  private readonly worker: Worker;
  private spentMs = 0;
  private failure: Error | null = null;

  constructor(
    pattern: string,
    ignoreCase: boolean,
    maxLineChars: number,
    private readonly timeLimitMs: number,
    private readonly signal?: AbortSignal,
  ) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { pattern, ignoreCase, maxLineChars, re2js: RE2JS_PATH },
      // A 20 MB file split into lines is well inside this; a runaway pattern can't take the host's memory.
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    this.worker.on("error", (error) => {
      this.failure = error;
    });
    this.worker.unref();
  }

  /** Lines of `bytes` (UTF-8) that match, at most `limit`; `more` when further lines matched past it. */
  search(bytes: Uint8Array, limit: number): Promise<{ matches: GrepLine[]; more: boolean }> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.signal?.aborted) return Promise.reject(new GrepStopped("aborted"));
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const finish = (outcome: () => void) => {
        clearTimeout(timer);
        this.worker.off("message", onMessage);
        this.worker.off("error", onError);
        this.signal?.removeEventListener("abort", onAbort);
        this.spentMs += performance.now() - started;
        outcome();
      };
      const stop = (reason: "timeout" | "aborted") => {
        void this.worker.terminate();
        finish(() => reject(new GrepStopped(reason)));
      };
      const onMessage = (result: { matches: GrepLine[]; more: boolean }) => finish(() => resolve(result));
      const onError = (error: Error) => finish(() => reject(error));
      const onAbort = () => stop("aborted");
      const timer = setTimeout(() => stop("timeout"), Math.max(0, this.timeLimitMs - this.spentMs));
      this.worker.on("message", onMessage);
      this.worker.on("error", onError);
      this.signal?.addEventListener("abort", onAbort, { once: true });
      this.worker.postMessage({ bytes, limit });
    });
  }

  /** Ends the worker; the search is over. */
  close(): void {
    void this.worker.terminate();
  }
}
