import { appendFileSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { CHROMIUM_NAMES, findOnPath } from "../../src/browser/find-chromium.js";

/** The environment variable naming the run directory the missing-programs reporter created for this run. */
export const MISSING_PROGRAMS_DIR_ENV = "MAGPIE_TEST_MISSING_PROGRAMS_DIR";

/** The file in that directory that collects one JSON line per test file that skipped for a missing program. */
export const MISSING_PROGRAMS_FILE = "missing.jsonl";

/** The Debian package that provides each program the tests may need (what `.ci/setup` installs). */
export const PACKAGE_OF: Readonly<Record<string, string>> = {
  bwrap: "bubblewrap",
  chromium: "chromium",
  dovecot: "dovecot-imapd",
  "espeak-ng": "espeak-ng",
  mosquitto: "mosquitto",
  mosquitto_passwd: "mosquitto",
  opusenc: "opus-tools",
  python3: "python3",
  setpriv: "util-linux",
  socat: "socat",
  "systemd-analyze": "systemd",
  "systemd-notify": "systemd",
};

/** One line of MISSING_PROGRAMS_FILE. */
export interface MissingProgramsRecord {
  file: string;
  programs: string[];
}

/** Whether `program` can be run from the PATH; "chromium" accepts every name the product's finder accepts. */
function isOnPath(program: string): boolean {
  return findOnPath(program === "chromium" ? CHROMIUM_NAMES : [program]) !== null;
}

/**
 * True when every program is on the PATH. When one is missing: under CI=true throws (the test file fails,
 * because CI must run everything); otherwise records the skip for the end-of-run summary and returns false.
 * Use as `describe.runIf(hasPrograms("chromium"))(…)`.
 */
export function hasPrograms(...programs: string[]): boolean {
  const missing = programs.filter((program) => !isOnPath(program));
  if (missing.length === 0) return true;
  if (process.env.CI === "true") {
    throw new Error(
      `${missing.join(", ")} not installed, and CI=true runs every test: run .ci/setup ` +
        `(or: sudo apt install ${[...new Set(missing.map((program) => PACKAGE_OF[program] ?? program))].join(" ")}).`,
    );
  }
  recordMissing(missing);
  return false;
}

/**
 * True when bubblewrap is installed (as hasPrograms("bwrap")) and works here. Installed but refused (no user
 * namespaces, as in an unprivileged container) is a real skip reason outside CI, and a failure under CI=true.
 */
export async function hasWorkingSandbox(): Promise<boolean> {
  if (!hasPrograms("bwrap")) return false;
  // Loaded only here, so a test that needs no sandbox doesn't load Magpie's config and security modules.
  const { probeSandbox } = await import("../../src/security/sandbox.js");
  const probe = await probeSandbox();
  if (probe.available) return true;
  const reason = `bubblewrap is installed but does not work here: ${probe.detail}`;
  if (process.env.CI === "true")
    throw new Error(`${reason}. CI=true runs every test: allow user namespaces.`);
  console.warn(`sandbox tests skipped: ${reason}`);
  return false;
}

/** Appends this test file's missing programs to the run directory, when the reporter made one. */
function recordMissing(programs: string[]): void {
  const directory = process.env[MISSING_PROGRAMS_DIR_ENV];
  if (!directory) return;
  // The worker knows which test file it is collecting; a call from a shared helper still counts for that file.
  const file = expect.getState().testPath ?? "";
  const record: MissingProgramsRecord = { file, programs };
  // One short O_APPEND write per line, so lines from parallel forks don't interleave.
  appendFileSync(path.join(directory, MISSING_PROGRAMS_FILE), `${JSON.stringify(record)}\n`);
}
