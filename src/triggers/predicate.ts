import { Environment } from "@marcbachmann/cel-js";
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

/**
 * The event as CEL sees it: whole JSON numbers become CEL ints (bigint), so `event.payload.count + 1` works;
 * comparisons mix int and double freely (`22 > 30.0` is simply false). Undefined fields are left out.
 */
function celValue(value: unknown): unknown {
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(celValue);
  if (value && typeof value === "object") {
    const result: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(value)) if (entry !== undefined) result[key] = celValue(entry);
    return result;
  }
  return value;
}
