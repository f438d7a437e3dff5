/**
 * Tool schemas cleaned for what each provider accepts (DESIGN.md → Tools: schema dialects). Every dialect
 * resolves local `$ref`s, flattens `anyOf`/`oneOf` with `null`, turns `const` into a one-value `enum`, merges
 * `allOf` of objects and keeps the top level a plain object; then each drops the keywords its provider rejects.
 */
export type SchemaDialect = "openai" | "anthropic" | "gemini" | "conservative";
export type SchemaDialectSetting = SchemaDialect | "auto";
type JsonObject = Record<string, unknown>;

const COMMON = [
  "type",
  "description",
  "properties",
  "required",
  "items",
  "enum",
  "anyOf",
  "minimum",
  "maximum",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "pattern",
];

/** Keywords each dialect keeps; anything else is removed. */
const KEPT: Record<SchemaDialect, ReadonlySet<string>> = {
  openai: new Set([
    ...COMMON,
    "title",
    "format",
    "default",
    "additionalProperties",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "minProperties",
    "maxProperties",
  ]),
  anthropic: new Set([
    ...COMMON,
    "title",
    "format",
    "default",
    "examples",
    "additionalProperties",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "oneOf",
  ]),
  // Gemini takes an OpenAPI 3.0 subset: no additionalProperties, no exclusive bounds, one type plus `nullable`.
  gemini: new Set([...COMMON, "title", "format", "nullable", "minProperties", "maxProperties"]),
  conservative: new Set([...COMMON, "nullable"]),
};

/** String formats Gemini accepts; it rejects the request for any other. */
const GEMINI_FORMATS = new Set(["date-time", "enum"]);

/** `auto` → the dialect for `baseUrl`: Google → gemini, Anthropic → anthropic, OpenAI (or none) → openai, else conservative. */
export function resolveSchemaDialect(
  setting: SchemaDialectSetting,
  baseUrl: string | undefined,
): SchemaDialect {
  if (setting !== "auto") return setting;
  if (!baseUrl) return "openai";
  let host: string;
  try {
    host = new URL(baseUrl).hostname.toLowerCase();
  } catch {
    return "conservative";
  }
  const on = (domain: string) => host === domain || host.endsWith(`.${domain}`);
  if (on("googleapis.com")) return "gemini";
  if (on("anthropic.com")) return "anthropic";
  if (on("openai.com") || on("openai.azure.com")) return "openai";
  // Local and unknown servers (Ollama, llama.cpp, vLLM, routers that forward to any provider) each reject
  // something different; the keywords every one of them accepts are the safe choice.
  return "conservative";
}

const MAX_REF_DEPTH = 8;

/** The JSON Schema of a tool's parameters as `dialect` accepts it. The input is not modified. */
export function cleanToolSchema(schema: unknown, dialect: SchemaDialect): JsonObject {
  const root = isObject(schema) ? schema : {};
  let cleaned = clean(root, { root, dialect, refs: [] });
  // The top level must be a plain object schema: providers reject unions and other types there.
  if (cleaned.type !== "object") {
    const merged = Array.isArray(cleaned.anyOf) ? mergeObjects(cleaned.anyOf.filter(isObject)) : null;
    cleaned = merged ?? { type: "object", properties: {} };
  }
  delete cleaned.anyOf;
  delete cleaned.oneOf;
  delete cleaned.nullable;
  // Gemini rejects an empty `properties`; the others want one.
  if (dialect === "gemini") {
    if (isEmptyObject(cleaned.properties)) delete cleaned.properties;
  } else cleaned.properties ??= {};
  return cleaned;
}

/** One schema node cleaned for `dialect`, without the top-level rules. */
export function cleanSchemaNode(node: unknown, dialect: SchemaDialect): unknown {
  if (!isObject(node)) return node;
  return clean(node, { root: node, dialect, refs: [] });
}

interface Walk {
  root: JsonObject;
  dialect: SchemaDialect;
  /** `$ref`s being expanded above this node (recursion guard). */
  refs: string[];
}

function clean(input: JsonObject, walk: Walk): JsonObject {
  let node = input;
  if (typeof node.$ref === "string") {
    const expanded = expandRef(node, walk);
    if (!expanded) return cutRecursion(node, walk);
    return clean(expanded.node, { ...walk, refs: [...walk.refs, expanded.ref] });
  }
  if (Array.isArray(node.allOf)) node = mergeAllOf(node, walk);
  const kept = KEPT[walk.dialect];
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "const") out.enum = [value];
    else if (key === "oneOf" && !kept.has("oneOf")) out.anyOf = cleanList(value, walk);
    else if (key === "properties" && isObject(value))
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, inner]) => [name, clean(isObject(inner) ? inner : {}, walk)]),
      );
    else if (key === "items")
      out.items = Array.isArray(value)
        ? clean(value.find(isObject) ?? {}, walk)
        : clean(isObject(value) ? value : {}, walk);
    else if (key === "additionalProperties" && isObject(value)) {
      if (kept.has(key)) out[key] = clean(value, walk);
    } else if (key === "anyOf" || key === "oneOf") out[key] = cleanList(value, walk);
    else if (kept.has(key)) out[key] = value;
    else if ((key === "exclusiveMinimum" || key === "exclusiveMaximum") && typeof value === "number")
      // Closest bound the dialect can say; a model rarely hits the edge, and the call is validated anyway.
      out[key === "exclusiveMinimum" ? "minimum" : "maximum"] ??= value;
  }
  flattenNullUnion(out, walk.dialect);
  normalizeType(out, walk.dialect);
  tidy(out, walk.dialect);
  return out;
}

function cleanList(value: unknown, walk: Walk): JsonObject[] {
  return Array.isArray(value) ? value.filter(isObject).map((item) => clean(item, walk)) : [];
}

/** Resolves `#`, `#/$defs/x`, `#/definitions/x` (any local JSON pointer); null past the depth or on a cycle. */
function expandRef(node: JsonObject, walk: Walk): { node: JsonObject; ref: string } | null {
  const ref = node.$ref as string;
  if (walk.refs.includes(ref) || walk.refs.length >= MAX_REF_DEPTH) return null;
  const target = ref.startsWith("#") ? resolvePointer(walk.root, ref.slice(1)) : undefined;
  // A remote reference is not fetched: what it points to stays open.
  const base = isObject(target) ? target : {};
  const { $ref: _ref, ...siblings } = node;
  return { node: { ...base, ...siblings }, ref };
}

function resolvePointer(root: JsonObject, pointer: string): unknown {
  if (pointer === "" || pointer === "/") return root;
  let current: unknown = root;
  for (const raw of pointer.replace(/^\//, "").split("/")) {
    const segment = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(current) && !Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/** A recursive reference, cut where it would repeat: an open object that says so. */
function cutRecursion(node: JsonObject, walk: Walk): JsonObject {
  const name = String(node.$ref).split("/").pop() || "the parent";
  const description = [
    typeof node.description === "string" ? node.description : null,
    `(same shape as ${name})`,
  ]
    .filter(Boolean)
    .join(" ");
  return walk.dialect === "gemini" || walk.dialect === "conservative"
    ? { type: "object", description }
    : { type: "object", description, additionalProperties: true };
}

function mergeAllOf(node: JsonObject, walk: Walk): JsonObject {
  const { allOf, ...rest } = node;
  const parts = (allOf as unknown[]).filter(isObject).map((part) => {
    if (typeof part.$ref !== "string") return part;
    const expanded = expandRef(part, walk);
    return expanded?.node ?? {};
  });
  return mergeObjects([rest, ...parts]) ?? rest;
}

/** Merges object schemas (properties and required united); null when one of them is not an object schema. */
function mergeObjects(parts: JsonObject[]): JsonObject | null {
  const merged: JsonObject = {};
  const properties: JsonObject = {};
  const required = new Set<string>();
  for (const part of parts) {
    if (part.type !== undefined && part.type !== "object") return null;
    for (const [key, value] of Object.entries(part)) {
      if (key === "properties" && isObject(value)) Object.assign(properties, value);
      else if (key === "required" && Array.isArray(value))
        for (const name of value) required.add(String(name));
      else if (!(key in merged)) merged[key] = value;
    }
  }
  merged.type = "object";
  merged.properties = properties;
  if (required.size > 0) merged.required = [...required];
  return merged;
}

const isNullSchema = (schema: unknown) => isObject(schema) && schema.type === "null";

/** `anyOf: [X, {type: null}]` → X (nullable where the dialect says so); `type: [T, "null"]` → T. */
function flattenNullUnion(out: JsonObject, dialect: SchemaDialect): void {
  const union = out.anyOf ?? out.oneOf;
  const key = out.anyOf ? "anyOf" : "oneOf";
  if (Array.isArray(union) && union.some(isNullSchema)) {
    const others = union.filter((schema) => !isNullSchema(schema));
    delete out[key];
    if (others.length === 1) {
      const { description, ...inner } = others[0] as JsonObject;
      for (const [name, value] of Object.entries(inner)) out[name] ??= value;
      if (description !== undefined && out.description === undefined) out.description = description;
    } else if (others.length > 1) out[key] = others;
    markNullable(out, dialect);
  }
  if (Array.isArray(out.type) && out.type.includes("null")) {
    const types = out.type.filter((type) => type !== "null");
    out.type = types.length === 1 ? types[0] : types;
    markNullable(out, dialect);
  }
  if (Array.isArray(out.enum) && out.enum.includes(null) && out.enum.length > 1) {
    out.enum = out.enum.filter((value) => value !== null);
    markNullable(out, dialect);
  }
}

function markNullable(out: JsonObject, dialect: SchemaDialect): void {
  if (KEPT[dialect].has("nullable")) out.nullable = true;
}

/** Dialects without type lists get one type (the rest as a union); inferable types are filled in. */
function normalizeType(out: JsonObject, dialect: SchemaDialect): void {
  if (Array.isArray(out.type)) {
    if (out.type.length === 0) delete out.type;
    else if (dialect === "gemini" || dialect === "conservative") {
      const types = out.type as string[];
      delete out.type;
      if (types.length === 1) out.type = types[0];
      else out.anyOf = types.map((type) => ({ type }));
    }
  }
  if (out.type === undefined && out.anyOf === undefined && out.oneOf === undefined) {
    if (out.properties) out.type = "object";
    else if (out.items) out.type = "array";
    else if (Array.isArray(out.enum) && out.enum.every((value) => typeof value === "string"))
      out.type = "string";
  }
}

function tidy(out: JsonObject, dialect: SchemaDialect): void {
  if (out.type === "array" && out.items === undefined)
    out.items = dialect === "gemini" ? { type: "string" } : {};
  if (isObject(out.properties) && Array.isArray(out.required)) {
    const properties = out.properties;
    out.required = out.required.filter((name) => typeof name === "string" && name in properties);
  }
  if (Array.isArray(out.required) && out.required.length === 0) delete out.required;
  // Large integer bounds (Number.MAX_SAFE_INTEGER from zod's .int()) are noise to a model.
  for (const bound of ["minimum", "maximum"]) {
    const value = out[bound];
    if (typeof value === "number" && Math.abs(value) >= Number.MAX_SAFE_INTEGER) delete out[bound];
  }
  if (dialect === "gemini") {
    if (typeof out.format === "string" && !(out.type === "string" && GEMINI_FORMATS.has(out.format)))
      delete out.format;
    // Gemini takes enums of strings only: other values are described instead of listed.
    if (Array.isArray(out.enum) && !out.enum.every((value) => typeof value === "string")) {
      const choices = out.enum.map((value) => JSON.stringify(value)).join(", ");
      out.description = [out.description, `One of: ${choices}.`].filter(Boolean).join(" ");
      delete out.enum;
    }
    if (out.type === "object" && isEmptyObject(out.properties)) delete out.properties;
  }
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isEmptyObject(value: unknown): boolean {
  return isObject(value) && Object.keys(value).length === 0;
}
