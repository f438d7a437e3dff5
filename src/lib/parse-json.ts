import type { z } from "zod";

/** Text that is not JSON, or JSON of another shape than expected: the message names what and where. */
export class JsonShapeError extends Error {
  readonly code = "json.invalid";

  constructor(
    /** What was being read ("outbox payload", "webhook body", …). */
    readonly what: string,
    /** The first problem, with its key path ("deliver.channel: expected string"). */
    readonly problem: string,
  ) {
    super(`${what}: ${problem}`);
    this.name = "JsonShapeError";
  }
}

export type ParsedJson<T> = { success: true; data: T } | { success: false; error: JsonShapeError };

/** The first issue of a failed parse, as `path: message` (the path is `(root)` for the value itself). */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
  return `${where}: ${issue.message}`;
}

/**
 * JSON text checked against a schema, never cast (STYLE.md → Errors; the AI SDK's `parseJSON({text, schema})`).
 * Returns the parsed value or an error naming `what` and the first wrong key path.
 */
export function safeParseJson<T>(text: string, schema: z.ZodType<T>, what = "JSON"): ParsedJson<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      success: false,
      error: new JsonShapeError(what, error instanceof Error ? error.message : "not JSON"),
    };
  }
  const parsed = schema.safeParse(value);
  return parsed.success
    ? { success: true, data: parsed.data }
    : { success: false, error: new JsonShapeError(what, firstIssue(parsed.error)) };
}

/** Like `safeParseJson`, but throws the `JsonShapeError` (for values this program wrote itself). */
export function parseJson<T>(text: string, schema: z.ZodType<T>, what = "JSON"): T {
  const parsed = safeParseJson(text, schema, what);
  if (!parsed.success) throw parsed.error;
  return parsed.data;
}
