import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

const VITEST = path.resolve("node_modules/vitest/vitest.mjs");
const CONFIG = path.resolve("test/fixtures/missing-programs/vitest.config.ts");

/** Runs the fixture suite (two files, three tests needing programs nobody has) in a vitest of its own. */
function runFixtureSuite(ci: boolean): Promise<{ code: number | null; output: string }> {
  const { CI: _ci, MAGPIE_TEST_MISSING_PROGRAMS_DIR: _directory, ...env } = process.env;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [VITEST, "run", "--config", CONFIG], {
      env: { ...env, NO_COLOR: "1", ...(ci ? { CI: "true" } : {}) },
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("exit", (code) => resolve({ code, output }));
  });
}

describe("the missing-programs summary across vitest's forks", () => {
  it("passes and ends with one line counting the skipped tests of both files and naming what to install", async () => {
    const { code, output } = await runFixtureSuite(false);
    expect(code).toBe(0);
    const lines = output.trimEnd().split("\n");
    expect(lines.at(-1)).toBe(
      "3 tests skipped: magpie-test-missing-program, magpie-test-other-missing not installed — run .ci/setup " +
        "(or: sudo apt install magpie-test-missing-program magpie-test-other-missing)",
    );
    expect(lines.filter((line) => line.includes("not installed"))).toHaveLength(1);
  }, 60_000);

  it("under CI=true a missing program fails the run, naming it and .ci/setup", async () => {
    const { code, output } = await runFixtureSuite(true);
    expect(code).toBe(1);
    expect(output).toMatch(
      /magpie-test-missing-program not installed, and CI=true runs every test: run \.ci\/setup/,
    );
    expect(output).toMatch(/Test Files +2 failed/);
  }, 60_000);
});
