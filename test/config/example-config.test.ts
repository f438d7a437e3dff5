import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { configSchema } from "../../src/config/schema.js";

/** Every key path of the schema (objects only; records and arrays contribute their element's keys). */
function keyPaths(schema: z.ZodType, prefix = ""): string[] {
  // biome-ignore lint/suspicious/noExplicitAny: walking zod's public `def` tree
  let node: any = schema;
  for (let i = 0; i < 10; i++) {
    if (node?.def?.innerType) node = node.def.innerType;
    else if (node?.def?.type === "pipe") node = node.def.in;
    else break;
  }
  if (node?.def?.type === "array") return keyPaths(node.def.element, `${prefix}[]`);
  if (node?.def?.type === "record") return keyPaths(node.def.valueType, `${prefix}.*`);
  if (!node?.shape) return [];
  return Object.entries(node.shape as Record<string, z.ZodType>).flatMap(([key, inner]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return [path, ...keyPaths(inner, path)];
  });
}

describe("config/magpie.example.yaml", () => {
  it("documents every key of the schema", () => {
    const example = readFileSync("config/magpie.example.yaml", "utf8");
    const missing = keyPaths(configSchema)
      .map(
        (path) =>
          path
            .split(/[.[\]*]+/)
            .filter(Boolean)
            .at(-1)!,
      )
      .filter((key, index, all) => all.indexOf(key) === index)
      .filter((key) => !new RegExp(`(^|[\\s{,#-])${key}:`, "m").test(example));
    expect(missing).toEqual([]);
  });
});
