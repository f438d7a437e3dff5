import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Reporter, TestModule, Vitest } from "vitest/node";
import {
  MISSING_PROGRAMS_DIR_ENV,
  MISSING_PROGRAMS_FILE,
  type MissingProgramsRecord,
  PACKAGE_OF,
} from "./requires.js";

/**
 * Prints one line at the end of the run when tests skipped because a program (chromium, socat, bwrap) is not
 * installed, naming what to install. hasPrograms() in the test forks records the skips in a run directory this
 * reporter creates before any fork starts (the forks inherit its path through the environment).
 */
export default class MissingProgramsReporter implements Reporter {
  private vitest: Vitest | undefined;
  private readonly directory = mkdtempSync(path.join(os.tmpdir(), "magpie-missing-programs-"));

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
    process.env[MISSING_PROGRAMS_DIR_ENV] = this.directory;
    process.once("exit", () => rmSync(this.directory, { recursive: true, force: true }));
  }

  onTestRunStart(): void {
    // Watch mode runs again in the same process; each run reports only its own skips.
    rmSync(this.recordsPath(), { force: true });
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const line = summarize(readRecords(this.recordsPath()), testModules);
    if (line) (this.vitest?.logger ?? console).log(line);
  }

  private recordsPath(): string {
    return path.join(this.directory, MISSING_PROGRAMS_FILE);
  }
}

/** The records hasPrograms() appended this run; none when nothing was missing. */
function readRecords(file: string): MissingProgramsRecord[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as MissingProgramsRecord);
}

/**
 * "12 tests skipped: chromium, socat not installed — run .ci/setup (or: sudo apt install chromium socat)",
 * or null. Counts the skipped tests of each file that recorded a missing program.
 */
export function summarize(
  records: MissingProgramsRecord[],
  testModules: ReadonlyArray<TestModule>,
): string | null {
  if (records.length === 0) return null;
  const programs = [...new Set(records.flatMap((record) => record.programs))].sort();
  const files = new Set(records.map((record) => record.file));
  let skipped = 0;
  for (const testModule of testModules) {
    if (!files.has(testModule.moduleId)) continue;
    for (const testCase of testModule.children.allTests()) {
      if (testCase.result().state === "skipped") skipped += 1;
    }
  }
  const packages = [...new Set(programs.map((program) => PACKAGE_OF[program] ?? program))].join(" ");
  const tests = skipped === 1 ? "1 test" : `${skipped} tests`;
  return (
    `${tests} skipped: ${programs.join(", ")} not installed — ` +
    `run .ci/setup (or: sudo apt install ${packages})`
  );
}
