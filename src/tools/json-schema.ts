import { z } from "zod";

/** JSON Schema keywords every major provider (OpenAI, Anthropic, Gemini) accepts in tool parameters. */
const PORTABLE_KEYS = new Set([
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
  "nullable",
]);

/** Converts a zod input schema to the JSON Schema sent to the LLM, cleaned for provider strictness. */
export function toToolParameters(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any", reused: "inline" }) as Record<
    string,
    unknown
  >;
  const cleaned = cleanSchema(json) as Record<string, unknown>;
  if (cleaned.type !== "object") return { type: "object", properties: {}, required: [] };
  cleaned.properties ??= {};
  return cleaned;
}

/**
 * Drops keywords some providers reject (`$schema`, `additionalProperties`, `default`, `format`, `const` …),
 * turns `const` into a one-value `enum`, and folds `oneOf` into `anyOf`.
 */
export function cleanSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(cleanSchema);
  if (!node || typeof node !== "object") return node;
  const input = node as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (key === "properties" && value && typeof value === "object") {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([name, inner]) => [name, cleanSchema(inner)]),
      );
    } else if (key === "const") {
      out.enum = [value];
    } else if (key === "oneOf") {
      out.anyOf = cleanSchema(value);
    } else if (key === "exclusiveMinimum" && typeof value === "number") {
      out.minimum = value;
    } else if (key === "exclusiveMaximum" && typeof value === "number") {
      out.maximum = value;
    } else if (PORTABLE_KEYS.has(key)) {
      out[key] = key === "items" || key === "anyOf" ? cleanSchema(value) : value;
    }
  }
  if (out.type === "object" && Array.isArray(out.required) && out.required.length === 0) delete out.required;
  // Large integer bounds (Number.MAX_SAFE_INTEGER from .int()) are noise to a model.
  if (typeof out.maximum === "number" && Math.abs(out.maximum) >= Number.MAX_SAFE_INTEGER) delete out.maximum;
  if (typeof out.minimum === "number" && Math.abs(out.minimum) >= Number.MAX_SAFE_INTEGER) delete out.minimum;
  return out;
}

/** Readable zod errors for the model: `path: message; path: message`. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length ? issue.path.join(".") : "(arguments)";
      return `${path}: ${issue.message}`;
    })
    .join("; ");
}
