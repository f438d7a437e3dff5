import { describe, expect, it } from "vitest";
import { parseBody } from "../../src/triggers/webhook-handler.js";

/**
 * A webhook body or MQTT payload is parsed as JSON when it is JSON; 1 MB of `[` made V8's JSON.parse spend about
 * a second failing on the main loop (the hostile sweep held the loop 1.7 s). Nesting past any real payload's depth
 * is taken as text after one linear scan; brackets inside strings don't count.
 */
describe("parseBody", () => {
  it("parses JSON and keeps other text", () => {
    expect(parseBody('{"temperature": 31.5, "tags": ["a", "b"]}')).toEqual({
      temperature: 31.5,
      tags: ["a", "b"],
    });
    expect(parseBody(Buffer.from("plain words"))).toBe("plain words");
  });

  it("brackets inside strings don't count toward the depth", () => {
    const body = JSON.stringify({ text: "[".repeat(5_000) });
    expect(parseBody(body)).toEqual({ text: "[".repeat(5_000) });
  });

  it("1,000 levels parse; 1,001 levels are text", () => {
    expect(parseBody(`${"[".repeat(1_000)}${"]".repeat(1_000)}`)).toBeInstanceOf(Array);
    expect(parseBody(`${"[".repeat(1_001)}${"]".repeat(1_001)}`)).toBe(
      `${"[".repeat(1_001)}${"]".repeat(1_001)}`,
    );
  });

  it("1 MB of unclosed brackets is text at once", () => {
    for (const body of ["[".repeat(1_000_000), "{".repeat(1_000_000), '{"a":'.repeat(200_000)]) {
      const started = performance.now();
      expect(parseBody(body)).toBe(body);
      expect(performance.now() - started).toBeLessThan(200);
    }
  });
});
