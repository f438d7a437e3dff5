import { z } from "zod";
import { cleanSchemaNode, cleanToolSchema, type SchemaDialect } from "./schema-dialect.js";

/** The JSON Schema of a zod input schema, as is (cleaned per dialect when offered: src/tools/schema-dialect.ts). */
export function zodToJsonSchema(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { io: "input", unrepresentable: "any", reused: "inline" }) as Record<
    string,
    unknown
  >;
}

/** Converts a zod input schema to the JSON Schema sent to the LLM, cleaned for `dialect`. */
export function toToolParameters(
  schema: z.ZodType,
  dialect: SchemaDialect = "conservative",
): Record<string, unknown> {
  return cleanToolSchema(zodToJsonSchema(schema), dialect);
}

/** One schema node cleaned for `dialect` (default: the keywords every provider accepts). */
export function cleanSchema(node: unknown, dialect: SchemaDialect = "conservative"): unknown {
  return cleanSchemaNode(node, dialect);
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
