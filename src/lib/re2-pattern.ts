import { createRequire } from "node:module";
import type { RE2JS } from "re2js";

/** re2js, loaded on first use: the config and the tool list import this module at start-up, most never match. */
let engine: typeof RE2JS | undefined;
function re2js(): typeof RE2JS {
  engine ??= (createRequire(import.meta.url)("re2js") as typeof import("re2js")).RE2JS;
  return engine;
}

/**
 * A pattern from outside Magpie's code (a trigger's CEL `matches()`, a model's `file_grep` regex, the owner's
 * `tools.shell.denyPatterns`) that meets outside text. RE2 (re2js, a port of Google's RE2) matches in time linear
 * in the text whatever the pattern: `^(a+)+$` on "aaaa…!" is as quick as `^a+$`. V8's own linear engine (the
 * `l` flag) took 1–20 s on a megabyte here; re2js takes 10–250 ms for the patterns people write. The time still
 * grows with the pattern's size too (an automaton's states), so patterns are kept small: see PATTERN_BUDGET.
 */
export interface Re2Pattern {
  /** The pattern as written. */
  readonly source: string;
  /** True when the pattern matches anywhere in `text` (RE2's partial match). */
  test(text: string): boolean;
}

/** Longer patterns are refused. */
export const MAX_PATTERN_CHARS = 1_000;

/**
 * The most instructions (as `programSize` estimates them) a pattern may compile to. re2js's own ceiling is 1.4
 * million, and compiling grows faster than the program: 70 × `(?:.{0,999}x)` (140,000 instructions) took 4.6 s on
 * the event loop; 5,000 take under 100 ms.
 */
export const PATTERN_BUDGET = 5_000;

/** What RE2 leaves out that a JavaScript regex has, said once for every message that refuses a pattern. */
export const RE2_SYNTAX_HINT =
  "patterns use RE2 syntax, which runs in linear time: no backreferences (\\1) or lookaround ((?=…), (?!…), (?<=…)), repetition counts up to 1000; case-insensitive with (?i)";

/** Compiles `pattern` with RE2, or says why it can't (a message naming the pattern's problem and RE2's rules). */
export function re2Pattern(
  pattern: string,
  options: { ignoreCase?: boolean; maxChars?: number } = {},
): Re2Pattern | string {
  const maxChars = options.maxChars ?? MAX_PATTERN_CHARS;
  if (pattern.length > maxChars)
    return `the pattern is ${pattern.length} characters; at most ${maxChars} are allowed`;
  const size = programSize(pattern);
  if (size > PATTERN_BUDGET)
    return `the pattern is too large (it compiles to about ${size} instructions, at most ${PATTERN_BUDGET}): use smaller repetition counts`;
  let compiled: RE2JS;
  try {
    const re2 = re2js();
    compiled = re2.compile(pattern, options.ignoreCase ? re2.CASE_INSENSITIVE : 0);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `${reason.replace(/^error parsing regexp: /, "")} — ${RE2_SYNTAX_HINT}`;
  }
  return { source: pattern, test: (text) => compiled.test(text) };
}

/** A counted repetition `{n}`, `{n,}` or `{n,m}`, read where the scan stands. */
const COUNTED = /\{(\d+)(,(\d*))?\}/y;

/**
 * About how many instructions RE2 compiles `pattern` to, read before compiling it (compiling is the cost being
 * bounded, and re2js checks only against its own far larger limit): every atom counts one, a group counts what
 * it holds, and a counted repetition multiplies what it repeats. Hand-written because nothing exported by re2js
 * sizes a pattern without compiling it; a syntax it gets slightly wrong only moves the estimate by a few.
 */
export function programSize(pattern: string): number {
  const groups: number[] = [0];
  let last = 0;
  const add = (size: number) => {
    groups[groups.length - 1]! += size;
    last = size;
  };
  let index = 0;
  while (index < pattern.length) {
    const char = pattern[index]!;
    if (char === "\\") {
      const kind = pattern[index + 1] ?? "";
      if (kind === "Q") {
        const end = pattern.indexOf("\\E", index + 2);
        const stop = end < 0 ? pattern.length : end + 2;
        add(stop - index);
        index = stop;
        continue;
      }
      let end = index + 2;
      if ("pPx".includes(kind) && pattern[end] === "{") {
        const close = pattern.indexOf("}", end);
        end = close < 0 ? pattern.length : close + 1;
      }
      add(1);
      index = end;
    } else if (char === "[") {
      index = classEnd(pattern, index);
      add(1);
    } else if (char === "(") {
      groups.push(0);
      index++;
    } else if (char === ")") {
      const inner = groups.length > 1 ? groups.pop()! : 0;
      add(inner + 1);
      index++;
    } else if (char === "{") {
      COUNTED.lastIndex = index;
      const counted = COUNTED.exec(pattern);
      if (!counted) {
        add(1);
        index++;
        continue;
      }
      const least = Number(counted[1]);
      const most = counted[2] === undefined ? least : counted[3] ? Number(counted[3]) : least + 1;
      const times = Math.max(1, least, most);
      groups[groups.length - 1]! += last * (times - 1);
      last *= times;
      index = COUNTED.lastIndex;
    } else {
      add(1);
      index++;
    }
  }
  return groups.reduce((sum, size) => sum + size, 0);
}

/** Where the character class opening at `start` ends (just past its `]`). */
function classEnd(pattern: string, start: number): number {
  let index = start + 1;
  if (pattern[index] === "^") index++;
  if (pattern[index] === "]") index++;
  while (index < pattern.length && pattern[index] !== "]") {
    if (pattern[index] === "\\") index += 2;
    else if (pattern.startsWith("[:", index)) {
      const close = pattern.indexOf(":]", index + 2);
      index = close < 0 ? index + 1 : close + 2;
    } else index++;
  }
  return index + 1;
}
