import { readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";

/** What started a reload. */
export type ReloadSource = "signal" | "file" | "start";

const outcomeSchema = z.object({
  source: z.enum(["signal", "file", "start"]),
  /** When the reload was asked for (ms since the epoch): `magpie reload` waits for one asked after its signal. */
  requestedAt: z.number(),
  finishedAt: z.number(),
  /** False when the file was invalid (nothing changed) or a part failed to take over its keys. */
  ok: z.boolean(),
  /** The file's problems, one per key path (an invalid file changes nothing). */
  problems: z.array(z.string()),
  applied: z.array(z.string()),
  /**
   * A signal reload of a file the watcher had already applied when it was saved: what that reload applied (so
   * `magpie reload` right after saving still says what changed).
   */
  appliedOnSave: z.array(z.string()).default([]),
  /** Restart-only keys that changed, each with the value the running Magpie keeps (secrets shown as [REDACTED]). */
  needsRestart: z.array(z.object({ path: z.string(), running: z.string() })),
  failures: z.array(z.object({ part: z.string(), error: z.string() })),
});

/** The last reload's outcome, as the running Magpie writes it to `<dataDir>/reload-result.json`. */
export type ReloadOutcome = z.output<typeof outcomeSchema>;

export function reloadResultFile(dataDir: string): string {
  return path.join(dataDir, "reload-result.json");
}

/** Writes the outcome atomically (a reader never sees half of it). */
export function writeReloadOutcome(dataDir: string, outcome: ReloadOutcome): void {
  const file = reloadResultFile(dataDir);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(outcome, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}

/** The last outcome written, or null when there is none (or it can't be read). */
export function readReloadOutcome(dataDir: string): ReloadOutcome | null {
  try {
    const parsed = outcomeSchema.safeParse(JSON.parse(readFileSync(reloadResultFile(dataDir), "utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The outcome as `magpie reload` prints it (also the text the owner gets for an invalid file). */
export function describeReloadOutcome(outcome: ReloadOutcome): string[] {
  if (outcome.problems.length > 0) {
    return [
      "✗ The config file is invalid; Magpie keeps running with its previous config:",
      ...outcome.problems.map((problem) => `  - ${problem}`),
    ];
  }
  const lines: string[] = [];
  const nothing = [outcome.applied, outcome.appliedOnSave, outcome.needsRestart].every(
    (list) => list.length === 0,
  );
  if (nothing) lines.push("  nothing changed");
  if (outcome.appliedOnSave.length > 0)
    lines.push(`  applied when the file was saved: ${outcome.appliedOnSave.join(", ")}`);
  if (outcome.applied.length > 0) lines.push(`  applied: ${outcome.applied.join(", ")}`);
  for (const { path: keyPath, running } of outcome.needsRestart)
    lines.push(`  needs a restart: ${keyPath} (still ${running})`);
  for (const { part, error } of outcome.failures) lines.push(`  failed: ${part} — ${error}`);
  return lines;
}
