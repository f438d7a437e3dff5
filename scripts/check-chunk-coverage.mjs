/**
 * After `vitest run` (part of `npm test`): every chunk of the shipped bundle must have been loaded by at least one
 * test that runs the built CLI (test/shipped/record-chunks.mjs writes what each such process loaded), or be listed
 * in test/shipped/unloaded-chunks.json with the reason. A chunk nothing loads is code users run and no test
 * proved in the form they run it (the undici interop bug hid in exactly such a chunk).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * Programs some shipped tests need (test/helpers/requires.ts). Where one is missing those tests skipped, so their
 * chunks can't have loaded: outside CI the check then only reports; under CI=true the tests themselves already
 * failed for the missing program.
 */
const OPTIONAL_PROGRAMS = [
  ["chromium", "chromium-browser", "google-chrome"],
  ["socat"],
  ["bwrap"],
  ["mosquitto"],
  ["dovecot"],
];
const onPath = (name) =>
  (process.env.PATH ?? "").split(path.delimiter).some((dir) => dir && existsSync(path.join(dir, name)));
const missingPrograms = OPTIONAL_PROGRAMS.filter((names) => !names.some(onPath)).map((names) => names[0]);

const bundleDir = "dist/bundle";
const recordDir = path.join(bundleDir, ".chunk-loads");
const meta = JSON.parse(readFileSync(path.join(bundleDir, "meta.json"), "utf8"));
const excused = JSON.parse(readFileSync("test/shipped/unloaded-chunks.json", "utf8"));

if (!existsSync(recordDir)) {
  console.error(
    "check-chunk-coverage: no shipped-build test recorded anything (dist/bundle/.chunk-loads is missing).",
  );
  process.exit(1);
}
const loaded = new Set(
  readdirSync(recordDir).flatMap((file) =>
    readFileSync(path.join(recordDir, file), "utf8").split("\n").filter(Boolean),
  ),
);

/** The sources a chunk was built from, largest first (what a reader recognises it by). */
function sourcesOf(output) {
  const sources = Object.entries(output.inputs)
    .sort(([, a], [, b]) => b.bytesInOutput - a.bytesInOutput)
    .map(([input]) => input);
  // A chunk with no code of its own only re-exports another chunk for a dynamic import() of its entry point.
  return sources.length > 0 ? sources : [output.entryPoint ?? "(re-exports only)"];
}

/** A chunk is excused when one of its sources starts with a listed prefix. */
function excuseOf(sources) {
  for (const [prefix, reason] of Object.entries(excused)) {
    if (prefix.startsWith("//")) continue;
    // A source path may sit behind ../ when node_modules is a symlink (a worktree): match at any path boundary.
    if (sources.some((source) => source.startsWith(prefix) || source.includes(`/${prefix}`))) return reason;
  }
  return null;
}

const chunks = Object.entries(meta.outputs).filter(([file]) => file.endsWith(".js"));
const missing = [];
let excusedCount = 0;
for (const [file, output] of chunks) {
  const relative = path.relative(bundleDir, file);
  if (loaded.has(relative)) continue;
  const sources = sourcesOf(output);
  if (excuseOf(sources)) {
    excusedCount++;
    continue;
  }
  missing.push(`${relative}: ${sources.slice(0, 4).join(", ")}${sources.length > 4 ? ", …" : ""}`);
}
if (missing.length > 0 && missingPrograms.length > 0 && process.env.CI !== "true") {
  console.log(
    `check-chunk-coverage: not enforced — ${missingPrograms.join(", ")} not installed, so the shipped tests that need them skipped (${missing.length} chunk(s) unloaded). Run .ci/setup for the full check.`,
  );
  process.exit(0);
}
if (missing.length > 0) {
  console.error(
    `check-chunk-coverage: ${missing.length} chunk(s) of the shipped bundle were loaded by no shipped-build test:\n  ${missing.join("\n  ")}\nDrive the feature through the built CLI in test/shipped/, or list its source in test/shipped/unloaded-chunks.json with the reason.`,
  );
  process.exit(1);
}
console.log(
  `check-chunk-coverage: all ${chunks.length} chunks of dist/bundle loaded by shipped-build tests (${excusedCount} excused in test/shipped/unloaded-chunks.json).`,
);
