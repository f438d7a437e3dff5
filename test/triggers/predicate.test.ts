import { describe, expect, it } from "vitest";
import { compilePredicate, predicateProblem } from "../../src/triggers/predicate.js";
import type { TriggerEvent } from "../../src/triggers/trigger.js";
import { hostileInputs, LINEAR_BOUND_MS, timed } from "../helpers/hostile-inputs.js";

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

  it("matches() runs RE2 in linear time: ^(a+)+$ on 34 characters of 'aaaa…!' answers false at once", () => {
    // cel-js's own matches() backtracks: 31 characters took 26 s here, and each one more doubles it.
    const nested = compilePredicate("event.payload.text.matches('^(a+)+$')");
    const hostile = `${"a".repeat(33)}!`;
    let result = true;
    expect(timed(() => (result = nested(mqtt({ text: hostile }))))).toBeLessThan(100);
    expect(result).toBe(false);
    expect(nested(mqtt({ text: "aaaa" }))).toBe(true);
  });

  it("matches() keeps RE2's meaning: a partial match, (?i), the global form, and strings only", () => {
    const found = (expression: string, payload: unknown) => compilePredicate(expression)(mqtt(payload));
    expect(found("event.payload.matches('LEAK')", "sensor LEAK 3")).toBe(true);
    expect(found("event.payload.matches('^LEAK')", "sensor LEAK 3")).toBe(false);
    expect(found("event.payload.matches('(?i)^sensor leak')", "Sensor LEAK 3")).toBe(true);
    expect(found("matches(event.payload, 'a+b')", "xaab")).toBe(true);
    expect(found("'abc'.matches('b') && !('abc'.matches('d'))", null)).toBe(true);
    expect(() => found("event.payload.matches('a')", 5)).toThrow(/not a string/);
    expect(predicateProblem("(1).matches('a')")).toMatch(/strings, not int/);
  });

  it("a pattern RE2 can't run, or one taken from the event, is refused when the config is checked", () => {
    expect(predicateProblem("event.payload.text.matches(r'(a)\\1')")).toMatch(/backreferences/);
    expect(predicateProblem("event.payload.text.matches('(?=a)b')")).toMatch(/lookaround/);
    expect(predicateProblem("event.payload.text.matches('a{5000}')")).toMatch(/repeat count/);
    expect(predicateProblem("event.payload.text.matches(event.payload.pattern)")).toMatch(/string literal/);
    expect(predicateProblem("matches(event.payload.text, 'x' + 'y')")).toMatch(/string literal/);
  });

  it("matches() over each 1 MB hostile input stays within the linear bound", () => {
    const patterns = ["^(a+)+$", "(a|aa)+$", "(\\w+\\s?)*$", "[^\\s]+$", "\\s+$", "(.*a){12}"];
    for (const [name, text] of Object.entries(hostileInputs())) {
      for (const pattern of patterns) {
        const predicate = compilePredicate(`event.payload.text.matches(r'${pattern}')`);
        const spent = timed(() => {
          predicate(mqtt({ text }));
        });
        expect(spent, `${pattern} on ${name}`).toBeLessThan(LINEAR_BOUND_MS);
      }
    }
  });

  it("a payload nested a million levels deep is an evaluation error, not a stack overflow", () => {
    let deep: unknown = "bottom";
    for (let level = 0; level < 1_000_000; level++) deep = [deep];
    const predicate = compilePredicate("event.payload.size() > 0");
    expect(() => predicate(mqtt(deep))).toThrow(/nests deeper than 1000 levels/);
    expect(predicate(mqtt([[["shallow"]]]))).toBe(true);
  });
});
