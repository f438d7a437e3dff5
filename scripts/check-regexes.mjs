/**
 * Lint step (`npm run lint`): every regular expression in src/ and channels/ must match in linear time, since
 * each one may meet a megabyte of outside text (a message, a fetched page, a tool's output) on the event loop.
 *
 * Finds regex literals and `new RegExp(…)`/`RegExp(…)` calls with the TypeScript parser, checks each literal
 * pattern with recheck (https://makenowjust-labs.github.io/recheck/) and fails on every one it finds
 * super-linear (status "vulnerable"), and on every pattern built at run time, unless a comment on its line or in
 * the comment lines right above it gives the reason:
 *
 *   // regex-input-bounded: <why the text it runs on is short>    a flagged literal kept as it is
 *   // regex-dynamic: <why the built pattern stays linear>        `new RegExp(variable)`
 *
 * A pattern that comes from outside (a user's, the model's, a config's) is not built with `new RegExp` at all:
 * src/security/re2-pattern.ts compiles it for RE2, linear in the text whatever the pattern.
 *
 * A reason is required after the colon. Results are cached per pattern in node_modules/.cache (recheck takes up
 * to seconds per pattern; a pattern it can't decide within the time limit is reported, not cached, and doesn't
 * fail the step).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import ts from "typescript";

const ROOTS = ["src", "channels"];
const BOUNDED = "regex-input-bounded:";
const DYNAMIC = "regex-dynamic:";
const CACHE_FILE = "node_modules/.cache/magpie-check-regexes.json";
/** Per pattern; the slow ones recheck does decide take about 3 s on a small box. */
const TIMEOUT_MS = 20_000;

const recheckVersion = createRequire(import.meta.url)("recheck/package.json").version;

/** Every .ts file under the roots. */
function sourceFiles() {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith(".ts")) files.push(full);
    }
  };
  for (const root of ROOTS) walk(root);
  return files.sort();
}

/** The reason given by `marker` on the node's line or in the comment lines directly above it, if any. */
function reasonFor(lines, line, marker) {
  for (let index = line; index >= 0; index--) {
    const text = lines[index];
    if (index < line && !/^\s*(\/\/|\/\*|\*)/.test(text)) break;
    const at = text.indexOf(marker);
    if (at >= 0)
      return (
        text
          .slice(at + marker.length)
          .replace(/\*\/.*$/, "")
          .trim() || null
      );
  }
  return null;
}

/** The literal text of a string argument, or null when it is computed. */
function literalText(node) {
  if (node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))) return node.text;
  return null;
}

/** Every regex in one file: `{ file, line, source, flags, dynamic, lines }`. */
function regexesIn(file) {
  const text = readFileSync(file, "utf8");
  const sourceFile = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found = [];
  const add = (node, source, flags, dynamic) => {
    const line = sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line;
    found.push({ file, line, source, flags, dynamic });
  };
  const visit = (node) => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const literal = node.getText(sourceFile);
      const end = literal.lastIndexOf("/");
      add(node, literal.slice(1, end), literal.slice(end + 1), false);
    } else if (
      (ts.isNewExpression(node) || ts.isCallExpression(node)) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === "RegExp"
    ) {
      const [patternArg, flagsArg] = node.arguments ?? [];
      const source = literalText(patternArg);
      const flags = flagsArg === undefined ? "" : literalText(flagsArg);
      if (source !== null && flags !== null) add(node, source, flags, false);
      else add(node, patternArg ? patternArg.getText(sourceFile) : "", flags ?? "?", true);
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  const lines = text.split("\n");
  for (const regex of found) {
    regex.bounded = reasonFor(lines, regex.line, BOUNDED);
    regex.dynamicReason = reasonFor(lines, regex.line, DYNAMIC);
  }
  return found;
}

function readCache() {
  try {
    const cache = JSON.parse(readFileSync(CACHE_FILE, "utf8"));
    return cache.recheck === recheckVersion ? cache.results : {};
  } catch {
    return {};
  }
}

function writeCache(results) {
  mkdirSync(path.dirname(CACHE_FILE), { recursive: true });
  writeFileSync(CACHE_FILE, JSON.stringify({ recheck: recheckVersion, results }));
}

const started = performance.now();
const regexes = sourceFiles().flatMap(regexesIn);
const literals = regexes.filter((regex) => !regex.dynamic);
const keyOf = (regex) => `${regex.flags}/${regex.source}`;
const cache = readCache();
const unchecked = [...new Set(literals.map(keyOf))].filter((key) => !cache[key]);
/** This run's results, cached or not (undecided ones aren't cached). */
const results = new Map(Object.entries(cache));
if (unchecked.length > 0) {
  // Loaded only when something is new: recheck starts its native checker as a child process.
  const { check } = await import("recheck");
  await Promise.all(
    unchecked.map(async (key) => {
      const slash = key.indexOf("/");
      const diagnostics = await check(key.slice(slash + 1), key.slice(0, slash), {
        timeout: TIMEOUT_MS,
        // Step limits only, no wall-clock ones: the fuzzer's verdicts then don't depend on the machine's load.
        attackTimeout: null,
        incubationTimeout: null,
        seedingTimeout: null,
      });
      const result = {
        status: diagnostics.status,
        summary: diagnostics.complexity?.summary ?? diagnostics.error?.kind ?? "",
        attack: diagnostics.attack?.pattern ?? "",
      };
      cache[key] = result;
      results.set(key, result);
    }),
  );
  writeCache(cache);
}
const failures = [];
const notes = [];
for (const regex of regexes) {
  const where = `${regex.file}:${regex.line + 1}`;
  if (regex.dynamic) {
    if (!regex.dynamicReason)
      failures.push(
        `${where}: RegExp built at run time from ${regex.source} — say why it stays linear with // ${DYNAMIC} <why>`,
      );
    continue;
  }
  const key = keyOf(regex);
  const result = results.get(key);
  if (result.status === "vulnerable") {
    const line = `${where}: /${regex.source}/${regex.flags} is super-linear (${result.summary}; attack ${result.attack})`;
    if (regex.bounded) notes.push(`${line} — kept: ${regex.bounded}`);
    else failures.push(`${line} — rewrite it, or bound its input and say why with // ${BOUNDED} <why>`);
  } else if (result.status === "unknown") {
    notes.push(`${where}: /${regex.source}/${regex.flags} could not be decided (${result.summary})`);
  }
}

const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `check-regexes: ${regexes.length} regexes (${literals.length} literal, ${new Set(literals.map(keyOf)).size} distinct, ${unchecked.length} checked by recheck now, the rest cached; ${regexes.length - literals.length} built at run time) in ${seconds} s`,
);
for (const note of notes) console.log(`  note: ${note}`);
for (const failure of failures) console.error(`  ${failure}`);
if (failures.length > 0) {
  console.error(`check-regexes: ${failures.length} finding(s)`);
  process.exit(1);
}
process.exit(0);
