import { Environment } from "@marcbachmann/cel-js";
import { type Re2Pattern, re2Pattern } from "../lib/re2-pattern.js";
import type { TriggerEvent } from "./trigger.js";

/** A compiled `when`: true when the event matters. Throws on an evaluation error (the caller counts it as "no"). */
export type Predicate = (event: TriggerEvent) => boolean;

/** Macros that loop over a list or map: one inside another would make a predicate quadratic in the payload. */
const COMPREHENSIONS = new Set(["all", "exists", "exists_one", "map", "filter"]);

// One environment for every predicate: `event` is the only variable, a map whose fields are dynamic.
const environment = new Environment({
  unlistedVariablesAreDyn: false,
  homogeneousAggregateLiterals: false,
  limits: {
    maxAstNodes: 2_000,
    maxDepth: 32,
    maxListElements: 1_000,
    maxMapEntries: 1_000,
    maxCallArguments: 32,
  },
}).registerVariable("event", "map");

/*
 * CEL's `matches()` is RE2, and cel-js runs it with JavaScript's backtracking RegExp on the event loop:
 * `event.payload.text.matches('^(a+)+$')` on 34 characters of "aaaa…!" stalled the bot 31 s. cel-js refuses a
 * second `string.matches` overload, so both forms are macros (cel-js's documented extension point, expanded
 * while parsing) that compile the pattern with RE2 once, when the expression is parsed — a bad pattern is a
 * config error naming `triggers.<name>.when` — and match in linear time. A macro applies to every receiver of
 * its name and arity whatever the type it is declared on; `bytes` is only there because a `string` or `dyn`
 * receiver would collide with cel-js's own declaration.
 */
type MacroNode = { op: string; args: unknown };
type MacroChecker = {
  check(node: MacroNode, context: unknown): { kind: string; name: string };
  getType(name: string): unknown;
  createError(code: string, message: string, node: MacroNode): Error;
};
type MacroEvaluator = {
  run(node: MacroNode, context: unknown): unknown;
  createError(code: string, message: string, node: MacroNode): Error;
};

function matchesMacro(call: MacroNode, text: MacroNode, pattern: MacroNode) {
  const regex = literalPattern(pattern);
  return {
    typeCheck(checker: MacroChecker, _macro: unknown, context: unknown) {
      for (const node of [text, pattern]) {
        const type = checker.check(node, context);
        if (type.kind !== "dyn" && type.name !== "string")
          throw checker.createError(
            "no_matching_overload",
            `matches() takes strings, not ${type.name}`,
            call,
          );
      }
      return checker.getType("bool");
    },
    evaluate(evaluator: MacroEvaluator, _macro: unknown, context: unknown) {
      const value = evaluator.run(text, context);
      if (typeof value !== "string")
        throw evaluator.createError("no_such_overload", `matches() on a ${typeof value}, not a string`, call);
      return regex.test(value);
    },
  };
}

/** The pattern must be written in the expression: one taken from the event would be the sender's to choose. */
function literalPattern(node: MacroNode): Re2Pattern {
  if (node.op !== "value" || typeof node.args !== "string")
    throw new Error(
      "matches() takes its pattern as a string literal ('…'), not a value computed from the event",
    );
  const compiled = re2Pattern(node.args);
  if (typeof compiled === "string") throw new Error(`matches('${node.args}'): ${compiled}`);
  return compiled;
}

type MacroCall = { ast: MacroNode; args: MacroNode[]; receiver: MacroNode };
environment
  .registerFunction("bytes.matches(ast): bool", ({ ast, args, receiver }: MacroCall) =>
    matchesMacro(ast, receiver, args[0]!),
  )
  .registerFunction("matches(ast, ast): bool", ({ ast, args }: MacroCall) =>
    matchesMacro(ast, args[0]!, args[1]!),
  );

/** Why `expression` can't be a trigger's `when` (parse, type or shape), or null when it can. */
export function predicateProblem(expression: string): string | null {
  try {
    const parsed = environment.parse(expression);
    const checked = parsed.check();
    if (!checked.valid) return firstLine(checked.error?.message ?? "does not type-check");
    if (checked.type !== "bool" && checked.type !== "dyn")
      return `must be true or false, and this expression gives a ${checked.type}`;
    if (nestedComprehension(parsed.ast, false))
      return "a loop macro (all, exists, exists_one, map, filter) inside another is not allowed: a predicate must stay linear in the event's size";
    return null;
  } catch (error) {
    return firstLine(error instanceof Error ? error.message : String(error));
  }
}

/** Compiles a checked `when` (call `predicateProblem` first; this throws on what it reports). */
export function compilePredicate(expression: string): Predicate {
  const problem = predicateProblem(expression);
  if (problem) throw new Error(problem);
  const evaluate = environment.parse(expression);
  return (event) => evaluate({ event: celValue(event) }) === true;
}

function firstLine(text: string): string {
  return text.split("\n")[0]?.trim() ?? text;
}

type AstLike = { op: string; args: unknown };

function nestedComprehension(node: unknown, inside: boolean): boolean {
  if (!node || typeof node !== "object") return false;
  if (Array.isArray(node)) return node.some((child) => nestedComprehension(child, inside));
  const ast = node as AstLike;
  if (typeof ast.op !== "string") return false;
  const isLoop = ast.op === "rcall" && Array.isArray(ast.args) && COMPREHENSIONS.has(String(ast.args[0]));
  if (isLoop && inside) return true;
  return nestedComprehension(ast.args, inside || isLoop);
}

/** The deepest an event's payload may nest for a predicate to read it. */
const MAX_DEPTH = 1_000;

/**
 * The event as CEL sees it: whole JSON numbers become CEL ints (bigint), so `event.payload.count + 1` works;
 * comparisons mix int and double freely (`22 > 30.0` is simply false). Undefined fields are left out. A payload
 * nested deeper than MAX_DEPTH (a megabyte of `[[[…]]]`) is an evaluation error rather than a stack overflow.
 */
function celValue(value: unknown, depth = 0): unknown {
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (!value || typeof value !== "object") return value;
  if (depth >= MAX_DEPTH) throw new Error(`the event nests deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(value)) return value.map((entry) => celValue(entry, depth + 1));
  const result: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(value))
    if (entry !== undefined) result[key] = celValue(entry, depth + 1);
  return result;
}
