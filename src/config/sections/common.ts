import { z } from "zod";

/** Describes what was given, for error messages ("got 5", "got \"abc\""). */
export function describeInput(input: unknown): string {
  if (input === undefined) return "nothing";
  if (typeof input === "string") return JSON.stringify(input);
  try {
    const text = JSON.stringify(input);
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch {
    return String(input);
  }
}

/** A platform id written as a string or a number in YAML; always a string inside Magpie. */
export const idSchema = z
  .union([
    z.string().min(1),
    // Discord snowflakes exceed 2^53: as YAML numbers they silently lose digits and match nobody.
    z
      .number()
      .int()
      .refine(
        Number.isSafeInteger,
        'this id is too long for a YAML number — quote it ("123…") so no digits are lost',
      ),
  ])
  .transform((value) => String(value));

/** A list of ids with an error that says what was expected. */
export function idListSchema(what: string) {
  return z.array(idSchema, {
    error: (issue) => `expected a list of ${what}, got ${describeInput(issue.input)}`,
  });
}

export const positiveInt = z.number().int().positive();
