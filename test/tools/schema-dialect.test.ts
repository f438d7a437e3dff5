import { describe, expect, it } from "vitest";
import { cleanToolSchema, resolveSchemaDialect, type SchemaDialect } from "../../src/tools/schema-dialect.js";

/** A schema the way MCP servers and pydantic write them: $defs/$ref, null unions, const, allOf, formats. */
const TRICKY = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: {
    Point: {
      type: "object",
      properties: { x: { type: "number" }, y: { type: "number" } },
      required: ["x", "y"],
    },
    Node: { type: "object", properties: { value: { type: "string" }, child: { $ref: "#/$defs/Node" } } },
  },
  properties: {
    start: { $ref: "#/$defs/Point", description: "Where to start" },
    label: { anyOf: [{ type: "string", format: "email" }, { type: "null" }], default: null },
    mode: { const: "fast" },
    level: { type: "integer", enum: [1, 2, 3] },
    ratio: { type: "number", exclusiveMinimum: 0 },
    extra: { type: "object", additionalProperties: { type: "string" } },
    tree: { $ref: "#/$defs/Node" },
    tags: { type: "array" },
    both: {
      allOf: [
        { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
        { properties: { b: { type: "string" } } },
      ],
    },
    maybe: { type: ["string", "null"] },
  },
  required: ["start", "mode", "ghost"],
  additionalProperties: false,
};

const DIALECTS: SchemaDialect[] = ["openai", "anthropic", "gemini", "conservative"];

describe("schema dialects", () => {
  it.each(DIALECTS)(
    "%s: local $ref resolved, null unions flattened, const → enum, no $defs left",
    (dialect) => {
      const cleaned = cleanToolSchema(TRICKY, dialect);
      const text = JSON.stringify(cleaned);
      expect(text).not.toMatch(/\$ref|\$defs|\$schema|"const"|"null"|allOf/);
      const properties = cleaned.properties as Record<string, Record<string, unknown>>;
      expect(cleaned.type).toBe("object");
      expect(properties.start).toMatchObject({
        type: "object",
        description: "Where to start",
        required: ["x", "y"],
      });
      expect(properties.label?.type).toBe("string");
      expect(properties.label?.anyOf).toBeUndefined();
      expect(properties.mode).toMatchObject({ enum: ["fast"], type: "string" });
      expect(properties.maybe?.type).toBe("string");
      expect(properties.both).toMatchObject({
        type: "object",
        properties: { a: {}, b: {} },
        required: ["a"],
      });
      expect(properties.tags?.items).toBeDefined();
      // The recursive child is cut where it repeats, as an object that says so.
      const tree = properties.tree as { properties: { child: Record<string, unknown> } };
      expect(tree.properties.child).toMatchObject({ type: "object", description: "(same shape as Node)" });
      // A required name without a property is dropped (Gemini rejects it).
      expect(cleaned.required).toEqual(["start", "mode"]);
    },
  );

  it("gemini: no additionalProperties, no exclusive bounds, formats only it knows, enums of strings only, nullable", () => {
    const cleaned = cleanToolSchema(TRICKY, "gemini");
    const properties = cleaned.properties as Record<string, Record<string, unknown>>;
    expect(JSON.stringify(cleaned)).not.toMatch(/additionalProperties|exclusiveMinimum|"default"|email/);
    expect(properties.level).toEqual({ type: "integer", description: "One of: 1, 2, 3." });
    expect(properties.ratio).toEqual({ type: "number", minimum: 0 });
    expect(properties.label).toMatchObject({ type: "string", nullable: true });
    expect(properties.tags?.items).toEqual({ type: "string" });
    // No empty `properties` objects.
    expect(cleanToolSchema({ type: "object", properties: {} }, "gemini")).toEqual({ type: "object" });
  });

  it("openai: keeps format, default, additionalProperties and numeric enums; no nullable", () => {
    const cleaned = cleanToolSchema(TRICKY, "openai");
    const properties = cleaned.properties as Record<string, Record<string, unknown>>;
    expect(properties.label).toEqual({ type: "string", format: "email", default: null });
    expect(properties.level).toEqual({ type: "integer", enum: [1, 2, 3] });
    expect(properties.ratio).toEqual({ type: "number", exclusiveMinimum: 0 });
    expect(properties.extra).toEqual({ type: "object", additionalProperties: { type: "string" } });
    expect(cleaned.additionalProperties).toBe(false);
    expect(JSON.stringify(cleaned)).not.toContain("nullable");
  });

  it("anthropic: keeps oneOf below the top level; the top level is always a plain object", () => {
    const schema = {
      type: "object",
      properties: { pick: { oneOf: [{ type: "string" }, { type: "number" }] } },
    };
    expect(cleanToolSchema(schema, "anthropic").properties).toEqual({
      pick: { oneOf: [{ type: "string" }, { type: "number" }] },
    });
    expect(cleanToolSchema(schema, "openai").properties).toEqual({
      pick: { anyOf: [{ type: "string" }, { type: "number" }] },
    });
    const union = {
      anyOf: [
        { type: "object", properties: { a: { type: "string" } } },
        { type: "object", properties: { b: { type: "number" } } },
      ],
    };
    for (const dialect of DIALECTS)
      expect(cleanToolSchema(union, dialect)).toMatchObject({ type: "object", properties: { a: {}, b: {} } });
  });

  it("conservative: only the keywords every provider accepts", () => {
    const cleaned = cleanToolSchema(TRICKY, "conservative");
    expect(JSON.stringify(cleaned)).not.toMatch(/additionalProperties|format|default|exclusive|title/);
    expect((cleaned.properties as Record<string, unknown>).maybe).toEqual({ type: "string", nullable: true });
  });

  it("does not modify its input", () => {
    const copy = structuredClone(TRICKY);
    for (const dialect of DIALECTS) cleanToolSchema(TRICKY, dialect);
    expect(TRICKY).toEqual(copy);
  });

  it("auto picks the dialect from the base URL", () => {
    expect(resolveSchemaDialect("auto", undefined)).toBe("openai");
    expect(resolveSchemaDialect("auto", "https://api.openai.com/v1")).toBe("openai");
    expect(resolveSchemaDialect("auto", "https://generativelanguage.googleapis.com/v1beta/openai/")).toBe(
      "gemini",
    );
    expect(resolveSchemaDialect("auto", "https://api.anthropic.com/v1/")).toBe("anthropic");
    expect(resolveSchemaDialect("auto", "http://127.0.0.1:11434/v1")).toBe("conservative");
    expect(resolveSchemaDialect("auto", "https://evil-anthropic.com.example/v1")).toBe("conservative");
    expect(resolveSchemaDialect("gemini", "https://api.openai.com/v1")).toBe("gemini");
  });
});
