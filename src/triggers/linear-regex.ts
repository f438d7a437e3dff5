import v8 from "node:v8";

let enabled = false;

/**
 * Compiles a user's pattern (a serial trigger's `match`) for V8's non-backtracking engine (the `l` flag):
 * matching takes time linear in the line, whatever the pattern, or the pattern is refused here — backreferences
 * and lookaround, which that engine can't run. Returns the RegExp or why not.
 */
export function linearRegex(pattern: string): RegExp | string {
  if (!enabled) {
    // Only makes the `l` flag parseable; every other pattern keeps V8's usual engine.
    v8.setFlagsFromString("--enable-experimental-regexp-engine");
    enabled = true;
  }
  try {
    // regex-dynamic: the `l` flag runs the pattern on the linear-time engine, or the constructor throws.
    return new RegExp(pattern, "l");
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `${reason} — patterns run in linear time, so backreferences and lookaround are not available`;
  }
}
