import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type TriggerSource, triggerSourceSchema } from "../../src/config/sections/triggers.js";
import { triggerAddTool } from "../../src/tools/trigger-add.js";
import { triggerSources } from "../../src/triggers/sources/index.js";

/**
 * The trigger source catalog (docs/architecture.md → "Adding a trigger source"): a source is its module in
 * src/triggers/sources/<key>.ts (its behaviour and its `on` shape) and one line in that folder's index.ts.
 * Nothing else in the code names a source: the config's `on` union, the engine, the runtime, `/triggers`,
 * trigger_add and the authority rule read the catalog.
 */

const SOURCES_DIR = path.resolve(import.meta.dirname, "../../src/triggers/sources");
const moduleFiles = readdirSync(SOURCES_DIR)
  .filter((file) => file.endsWith(".ts") && file !== "index.ts")
  .map((file) => file.replace(/\.ts$/, ""));

describe("the trigger source catalog", () => {
  it("lists every module of src/triggers/sources/ under the key its file is named for", () => {
    expect(Object.keys(triggerSources).sort()).toEqual([...moduleFiles].sort());
    for (const [key, source] of Object.entries(triggerSources)) expect(source.key).toBe(key);
  });

  it("derives the config's `on` union from the catalog: one option per source, each with its own key only", () => {
    expect(triggerSourceSchema.options).toHaveLength(Object.keys(triggerSources).length);
    for (const [key, source] of Object.entries(triggerSources)) {
      expect(Object.keys(source.on.shape)).toEqual([key]);
      // The config's option is the module's own shape, not a copy kept beside it.
      expect(triggerSourceSchema.options).toContain(source.on);
    }
    const refusal = triggerSourceSchema.safeParse({}).error?.issues[0]?.message ?? "";
    expect(refusal).toMatch(/^give exactly one of /);
    for (const key of Object.keys(triggerSources)) expect(refusal).toContain(key);
  });

  it("keeps each source's `on` shape in its own file: the config section spells none", () => {
    const section = readFileSync(
      path.resolve(import.meta.dirname, "../../src/config/sections/triggers.ts"),
      "utf8",
    );
    const spelled = Object.keys(triggerSources).filter((key) => new RegExp(`\\b${key}: z\\.`).test(section));
    expect(spelled).toEqual([]);
    for (const key of moduleFiles) {
      const text = readFileSync(path.join(SOURCES_DIR, `${key}.ts`), "utf8");
      expect(text).toContain(`export const ${key}On = z.strictObject({`);
      expect(text).toContain(`on: ${key}On,`);
    }
  });

  it("names every source in trigger_add's description and its `on` parameter, from the catalog", () => {
    const parameters = z.toJSONSchema(triggerAddTool.inputSchema, { io: "input" });
    const onParameter = parameters.properties?.on;
    const on = typeof onParameter === "object" ? (onParameter.description ?? "") : "";
    for (const source of Object.values(triggerSources)) {
      expect(triggerAddTool.description).toContain(source.listensTo);
      expect(on).toContain(source.example);
    }
    // Derived, not hand-kept: a source added to the catalog is named without touching the tool.
    const listed = Object.values(triggerSources).map((source) => source.listensTo);
    expect(triggerAddTool.description).toContain(`(${listed.slice(0, -1).join(", ")}, or ${listed.at(-1)})`);
    expect(on).toBe(
      `One of ${Object.values(triggerSources)
        .map((source) => source.example)
        .join(", ")}.`,
    );
  });

  it("finds the module of each `on` and no other", () => {
    for (const key of Object.keys(triggerSources)) {
      // The shape inside does not matter here: a source knows its `on` by its key.
      const on = Object.fromEntries([[key, {}]]) as TriggerSource;
      const handling = Object.values(triggerSources).filter((source) => source.handles(on));
      expect(handling.map((source) => source.key)).toEqual([key]);
    }
  });

  it("names no source outside the catalog: the runtime, the service, the engine and the authority rule hold no branch per source", () => {
    const triggersDir = path.resolve(SOURCES_DIR, "..");
    const files = [
      "trigger-runtime.ts",
      "trigger-service.ts",
      "trigger-engine.ts",
      "trigger-authority.ts",
      "trigger.ts",
    ];
    const branches = files.flatMap((file) => {
      const text = readFileSync(path.join(triggersDir, file), "utf8");
      return Object.keys(triggerSources)
        .filter((key) => text.includes(`"${key}" in `))
        .map((key) => `${file}: "${key}" in`);
    });
    expect(branches).toEqual([]);
  });
});
