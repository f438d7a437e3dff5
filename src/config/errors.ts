import type { z } from "zod";
import { describeInput } from "./sections/common.js";

/** `channels.telegram.allowFrom[0]` from a zod path. */
export function formatKeyPath(path: ReadonlyArray<PropertyKey>): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else text += text ? `.${String(segment)}` : String(segment);
  }
  return text || "(root)";
}

function closest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

/** Known keys at a path of the schema's shape, for "did you mean" hints. */
function knownKeysAt(schema: z.ZodType, path: ReadonlyArray<PropertyKey>): string[] {
  // biome-ignore lint/suspicious/noExplicitAny: walking zod internals for a hint only
  let node: any = schema;
  for (const segment of path) {
    node = unwrap(node);
    if (typeof segment === "number") node = node?.def?.element;
    else node = node?.shape?.[segment] ?? node?.def?.valueType;
  }
  node = unwrap(node);
  return node?.shape ? Object.keys(node.shape) : [];
}

// biome-ignore lint/suspicious/noExplicitAny: see above
function unwrap(node: any): any {
  let current = node;
  for (let i = 0; i < 10 && current?.def?.innerType; i++) current = current.def.innerType;
  if (current?.def?.type === "pipe") return unwrap(current.def.in);
  return current;
}

/** One line per problem: `key.path: what is wrong — how to fix it`. */
export function formatConfigIssues(schema: z.ZodType, issues: z.core.$ZodIssue[]): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      const known = knownKeysAt(schema, issue.path);
      for (const key of issue.keys) {
        const path = formatKeyPath([...issue.path, key]);
        const suggestion = closest(key, known);
        lines.push(
          suggestion
            ? `${path}: unknown key — did you mean '${suggestion}'? Rename it or remove it.`
            : `${path}: unknown key — remove it${known.length ? ` (allowed here: ${known.join(", ")})` : ""}.`,
        );
      }
      continue;
    }
    if (issue.code === "invalid_union") {
      lines.push(`${formatKeyPath(issue.path)}: ${issue.message}.`);
      continue;
    }
    const path = formatKeyPath(issue.path);
    let message = issue.message;
    if (issue.code === "invalid_value" && "values" in issue) {
      message = `expected one of ${issue.values.map((value) => JSON.stringify(value)).join(" | ")}, got ${describeInput(issue.input)}`;
    } else if (issue.code === "invalid_type") {
      message = message.startsWith("expected a list")
        ? message
        : `expected ${issue.expected}, got ${describeInput(issue.input)}`;
      if (issue.input === undefined) message = `missing required key (expected ${issue.expected})`;
    }
    lines.push(`${path}: ${message} — fix it in the config file (see config/magpie.example.yaml).`);
  }
  return lines;
}
