import { describe, expect, it } from "vitest";
import { compilePredicate, predicateProblem } from "../../src/triggers/predicate.js";
import type { TriggerEvent } from "../../src/triggers/trigger.js";

const mqtt = (payload: unknown): TriggerEvent => ({ source: "mqtt", topic: "home/t", payload, at: 0 });

describe("trigger predicates (CEL)", () => {
  it("numbers compare across int and double: 22 > 30.0 is simply false", () => {
    const hot = compilePredicate("event.payload.temperature > 30.0");
    expect(hot(mqtt({ temperature: 22 }))).toBe(false);
    expect(hot(mqtt({ temperature: 31 }))).toBe(true);
    expect(hot(mqtt({ temperature: 30.5 }))).toBe(true);
    expect(compilePredicate("event.payload.count + 1 > 2")(mqtt({ count: 2 }))).toBe(true);
  });

  it("reads topics, strings and headers", () => {
    expect(compilePredicate("event.topic.startsWith('home/')")(mqtt({}))).toBe(true);
    expect(compilePredicate("event.payload == 'on'")(mqtt("on"))).toBe(true);
  });

  it("a missing field is an evaluation error (the engine counts it as no)", () => {
    expect(() => compilePredicate("event.payload.missing > 1")(mqtt({}))).toThrow(/missing/);
  });

  it("rejects bad syntax, unknown variables, non-boolean results and nested loops", () => {
    expect(predicateProblem("event.payload.x >")).toMatch(/Unexpected/);
    expect(predicateProblem("foo == 1")).toMatch(/Unknown variable: foo/);
    expect(predicateProblem("1 + 2")).toMatch(/must be true or false/);
    expect(predicateProblem("event.payload.a.all(x, event.payload.a.exists(y, y == x))")).toMatch(/linear/);
    expect(predicateProblem("event.payload.a.all(x, x > 1)")).toBeNull();
  });

  it("the README's examples check and decide as documented", () => {
    for (const expression of [
      "double(event.payload) > 30.0",
      "event.payload.workflow_run.conclusion == 'failure'",
      "event.value == 1",
      "int(event.payload.groups[1]) > 50",
    ])
      expect(predicateProblem(expression)).toBeNull();
    const attic = compilePredicate("double(event.payload) > 30.0");
    expect(attic(mqtt(31.5))).toBe(true);
    expect(attic(mqtt(22))).toBe(false);
    expect(() => attic(mqtt("unavailable"))).toThrow();
  });

  it("a loop over a large payload stays linear", () => {
    const all = compilePredicate("event.payload.a.all(x, x > 0)");
    const values = Array.from({ length: 100_000 }, (_, index) => index + 1);
    const started = performance.now();
    expect(all(mqtt({ a: values }))).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
