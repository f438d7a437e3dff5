import { RE2JS } from "re2js";

/**
 * A pattern from outside Magpie's code (a trigger's CEL `matches()`, a model's `file_grep` regex or glob, the
 * owner's `tools.shell.denyPatterns`) that meets outside text. RE2 (re2js, a port of Google's RE2) matches in
 * time linear in the text whatever the pattern: `^(a+)+$` on "aaaa…!" is as quick as `^a+$`. V8's own linear
 * engine (the `l` flag) took 1–20 s on a megabyte here, re2js 10–250 ms.
 */
export interface Re2Pattern {
  /** The pattern as written. */
  readonly source: string;
  /** True when the pattern matches anywhere in `text` (RE2's partial match). */
  test(text: string): boolean;
}

/** Longer patterns are refused: compiling takes time growing with the pattern, and so does matching. */
export const MAX_PATTERN_CHARS = 4_000;

/** What RE2 leaves out that a JavaScript regex has, said once for every message that refuses a pattern. */
export const RE2_SYNTAX_HINT =
  "patterns use RE2 syntax, which runs in linear time: no backreferences (\\1) or lookaround ((?=…), (?!…), (?<=…)), repetition counts up to 1000; case-insensitive with (?i)";

/** Compiles `pattern` with RE2, or says why it can't (a message naming the pattern's problem and RE2's rules). */
export function re2Pattern(pattern: string, options: { ignoreCase?: boolean } = {}): Re2Pattern | string {
  if (pattern.length > MAX_PATTERN_CHARS)
    return `the pattern is ${pattern.length} characters; at most ${MAX_PATTERN_CHARS} are allowed`;
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern, options.ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `${reason.replace(/^error parsing regexp: /, "")} — ${RE2_SYNTAX_HINT}`;
  }
  return { source: pattern, test: (text) => compiled.test(text) };
}
