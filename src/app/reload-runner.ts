import { createHash } from "node:crypto";
import { type FSWatcher, readFileSync, watch } from "node:fs";
import path from "node:path";
import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import { ConfigError } from "../lib/errors.js";
import type { Redactor } from "../log/redact.js";
import type { ReloadResult } from "./app.js";
import type { OwnerAlert } from "./owner-alert.js";
import { type ReloadOutcome, type ReloadSource, writeReloadOutcome } from "./reload-result.js";

export interface ConfigReloaderOptions {
  /** Applies a valid config (MagpieApp.reload). */
  apply(next: MagpieConfig): Promise<ReloadResult>;
  /** The running config (restart-only keys' values are read from it for the report). */
  running: MagpieConfig;
  /** Re-reads and validates the config the way start-up did; throws ConfigError. */
  load(): MagpieConfig | Promise<MagpieConfig>;
  logger: Logger;
  redactor: Redactor;
  /** Tells the owner (phone providers and their DM) that a new file can't be used. */
  tellOwner(alert: OwnerAlert): void;
  /** Quiet time after the last change of a watched file before it is read (editors write in steps). */
  debounceMs?: number;
  now?: () => number;
}

/**
 * Re-reads the config on request (SIGHUP, which `magpie reload` sends) or when the config file or its `.env`
 * changes, one reload at a time. A valid file is applied live; an invalid one changes nothing, is logged with its
 * key paths and the owner is told. Each outcome is written to `<dataDir>/reload-result.json` for `magpie reload`.
 */
export class ConfigReloader {
  private chain: Promise<unknown> = Promise.resolve();
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** A fingerprint of the watched files as last read: a write that changes nothing is no reload. */
  private seen = "";
  /** The last reload that changed something, and the files' fingerprint it read. */
  private lastApplied: { fingerprint: string; applied: string[] } | null = null;
  /** The problems the owner was last told about: the same broken file is not reported twice. */
  private toldProblems = "";
  private closed = false;
  private files: string[] = [];
  private readonly now: () => number;

  constructor(private readonly options: ConfigReloaderOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Re-reads the config now (after any reload under way); resolves with what happened. */
  request(source: ReloadSource): Promise<ReloadOutcome> {
    const requestedAt = this.now();
    const run = this.chain.then(() => this.reload(source, requestedAt));
    this.chain = run.catch(() => {});
    return run;
  }

  /**
   * Watches `files` (the config file and its `.env`): their directories, since editors replace a file by
   * renaming a new one over it. A change is read after `debounceMs` of quiet, and only reloads when the content
   * differs from what was last read.
   */
  watch(files: readonly string[]): void {
    const byDirectory = new Map<string, Set<string>>();
    for (const file of files) {
      const directory = path.dirname(file);
      const names = byDirectory.get(directory) ?? new Set<string>();
      names.add(path.basename(file));
      byDirectory.set(directory, names);
    }
    this.files = [...files];
    this.seen = this.fingerprint();
    for (const [directory, names] of byDirectory) {
      try {
        const watcher = watch(directory, { persistent: false }, (_event, name) => {
          if (name === null || names.has(name.toString())) this.changed();
        });
        watcher.on("error", (error) =>
          this.options.logger.warn({ err: error, directory }, "config-watch-failed"),
        );
        this.watchers.push(watcher);
      } catch (error) {
        this.options.logger.warn({ err: error, directory }, "config-watch-failed");
      }
    }
  }

  /** Stops watching; a reload under way finishes. */
  close(): Promise<unknown> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
    return this.chain;
  }

  private changed(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      const fingerprint = this.fingerprint();
      if (fingerprint === this.seen) return;
      this.seen = fingerprint;
      void this.request("file");
    }, this.options.debounceMs ?? 500);
    this.timer.unref();
  }

  /** The watched files' contents, hashed (a missing file counts as empty). */
  private fingerprint(): string {
    const hash = createHash("sha256");
    for (const file of this.files) {
      try {
        hash.update(readFileSync(file));
      } catch {
        hash.update("\0missing");
      }
      hash.update("\0");
    }
    return hash.digest("hex");
  }

  private async reload(source: ReloadSource, requestedAt: number): Promise<ReloadOutcome> {
    const { logger } = this.options;
    const base = {
      source,
      requestedAt,
      problems: [],
      applied: [],
      appliedOnSave: [],
      needsRestart: [],
      failures: [],
    };
    let next: MagpieConfig;
    const fingerprint = this.files.length > 0 ? this.fingerprint() : null;
    try {
      if (fingerprint !== null) this.seen = fingerprint;
      next = await this.options.load();
    } catch (error) {
      const problems =
        error instanceof ConfigError
          ? error.problems
          : [`(root): ${error instanceof Error ? error.message : String(error)}`];
      const redacted = problems.map((problem) => this.options.redactor.redact(problem));
      logger.error({ source, problems: redacted }, "config-reload-invalid");
      this.tellOwnerOnce(redacted);
      return this.record({ ...base, problems: redacted, ok: false, finishedAt: this.now() });
    }
    const result = await this.options.apply(next);
    this.toldProblems = "";
    const needsRestart = result.needsRestart.map((keyPath) => ({
      path: keyPath,
      running: this.runningValue(keyPath),
    }));
    if (needsRestart.length > 0) {
      logger.warn({ needsRestart: result.needsRestart }, "config-reload-needs-restart");
    }
    const earlier = this.lastApplied;
    const appliedOnSave =
      result.applied.length === 0 && fingerprint !== null && earlier?.fingerprint === fingerprint
        ? earlier.applied
        : [];
    if (result.applied.length > 0 && fingerprint !== null)
      this.lastApplied = { fingerprint, applied: result.applied };
    return this.record({
      ...base,
      ok: result.failures.length === 0,
      applied: result.applied,
      appliedOnSave,
      needsRestart,
      failures: result.failures,
      finishedAt: this.now(),
    });
  }

  private record(outcome: ReloadOutcome): ReloadOutcome {
    try {
      writeReloadOutcome(this.options.running.dataDir, outcome);
    } catch (error) {
      this.options.logger.warn({ err: error }, "reload-result-write-failed");
    }
    return outcome;
  }

  private tellOwnerOnce(problems: string[]): void {
    const key = problems.join("\n");
    if (key === this.toldProblems) return;
    this.toldProblems = key;
    const text = [
      "Your config file was changed but it is invalid, so I kept running with the previous one:",
      ...problems.map((problem) => `- ${problem}`),
      "Fix the file: it is read again when saved (or run `magpie reload`).",
    ].join("\n");
    try {
      this.options.tellOwner({ title: "Magpie: config not reloaded", text });
    } catch (error) {
      this.options.logger.warn({ err: error }, "config-reload-alert-failed");
    }
  }

  /** The running value at a key path, short and with secrets hidden. */
  private runningValue(keyPath: string): string {
    let node: unknown = this.options.running;
    for (const segment of keyPath.split(".")) {
      node = node && typeof node === "object" ? (node as Record<string, unknown>)[segment] : undefined;
    }
    const text = node === undefined ? "unset" : typeof node === "string" ? node : JSON.stringify(node);
    const short = text.length > 80 ? `${text.slice(0, 77)}...` : text;
    return this.options.redactor.redact(short);
  }
}
