import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hasPrograms, MISSING_PROGRAMS_DIR_ENV, MISSING_PROGRAMS_FILE } from "./requires.js";

describe("hasPrograms", () => {
  const saved = { ci: process.env.CI, directory: process.env[MISSING_PROGRAMS_DIR_ENV] };
  let directory: string;

  beforeEach(() => {
    directory = mkdtempSync(path.join(os.tmpdir(), "magpie-requires-"));
    process.env[MISSING_PROGRAMS_DIR_ENV] = directory;
  });

  afterEach(() => {
    restore("CI", saved.ci);
    restore(MISSING_PROGRAMS_DIR_ENV, saved.directory);
    rmSync(directory, { recursive: true, force: true });
  });

  it("is true when every program is on the PATH, and records nothing", () => {
    expect(hasPrograms("node", "git")).toBe(true);
    expect(() => readFileSync(path.join(directory, MISSING_PROGRAMS_FILE))).toThrow();
  });

  it("outside CI, returns false and records the missing program against this test file", () => {
    delete process.env.CI;
    expect(hasPrograms("node", "magpie-no-such-program")).toBe(false);
    const record = JSON.parse(readFileSync(path.join(directory, MISSING_PROGRAMS_FILE), "utf8"));
    expect(record).toEqual({
      file: expect.stringContaining("requires.test.ts"),
      programs: ["magpie-no-such-program"],
    });
  });

  it("under CI=true, throws naming the program and .ci/setup", () => {
    process.env.CI = "true";
    expect(() => hasPrograms("bwrap-magpie-missing")).toThrow(
      /bwrap-magpie-missing not installed.*\.ci\/setup/,
    );
  });
});

/** Puts an environment variable back as it was, unset included. */
function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
