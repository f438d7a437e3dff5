import { describe, expect, it } from "vitest";
import { renderTemplate } from "../../src/triggers/template.js";
import type { TriggerEvent } from "../../src/triggers/trigger.js";

const event: TriggerEvent = {
  source: "mqtt",
  topic: "home/t",
  payload: { t: 21.5, nested: { a: [1, 2] } },
  at: 0,
};

describe("message templates", () => {
  it("fills dotted paths; objects as JSON, missing values as nothing", () => {
    expect(renderTemplate("{{event.topic}}: {{ event.payload.t }} °C", event)).toBe("home/t: 21.5 °C");
    expect(
      renderTemplate("{{event.payload.nested}}|{{event.payload.none}}|{{event.constructor}}", event),
    ).toBe('{"a":[1,2]}||');
  });

  it("stays linear on a 1 MB hostile template and caps what it renders", () => {
    const started = performance.now();
    expect(renderTemplate(`{{${"a".repeat(1024 * 1024)}`, event)).toHaveLength(4_000);
    expect(renderTemplate("{{event.payload.nested}}".repeat(100_000), event).length).toBeLessThanOrEqual(
      4_000,
    );
    expect(renderTemplate(`x${"{{".repeat(500_000)}`, event).length).toBeLessThanOrEqual(4_000);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
