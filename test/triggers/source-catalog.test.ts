import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  type TriggerSource,
  triggerSourceOptions,
  triggerSourceSchema,
} from "../../src/config/sections/triggers.js";
import { triggerSources } from "../../src/triggers/sources/index.js";

/**
 * The trigger source catalog (docs/architecture.md → "Adding a trigger source"): a source is its module in
 * src/triggers/sources/<key>.ts, one line in that folder's index.ts and its `on` shape in the config section.
 * Nothing else in the code names a source: the engine, the runtime, `/triggers`, trigger_add and the authority
 * rule read the catalog.
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
    expect(Object.keys(triggerSourceOptions).sort()).toEqual(Object.keys(triggerSources).sort());
    expect(triggerSourceSchema.options).toHaveLength(Object.keys(triggerSources).length);
    for (const [key, option] of Object.entries(triggerSourceOptions)) {
      expect(Object.keys(option.shape)).toEqual([key]);
      expect(triggerSourceSchema.options).toContain(option);
    }
    const refusal = triggerSourceSchema.safeParse({}).error?.issues[0]?.message ?? "";
    expect(refusal).toMatch(/^give exactly one of /);
    for (const key of Object.keys(triggerSources)) expect(refusal).toContain(key);
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
