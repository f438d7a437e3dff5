import { afterEach, describe, expect, it } from "vitest";
import { defineFeature } from "../../src/app/feature.js";
import type { AccessControl } from "../../src/core/access.js";
import type { ButtonPress } from "../../src/core/types.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe("button presses", () => {
  it("reach handlers only when access control allows the presser, in registration order", async () => {
    const access: AccessControl = {
      check: () => ({ allow: true }),
      allowsPress: (press) => press.userId !== "intruder",
    };
    const seen: string[] = [];
    const handlers = defineFeature({
      name: "press-handlers",
      setup: () => ({
        buttonHandlers: [
          (press: ButtonPress) => {
            seen.push(`first:${press.buttonId}`);
            return press.buttonId === "approve:1";
          },
          (press: ButtonPress) => {
            seen.push(`second:${press.buttonId}`);
            return true;
          },
        ],
      }),
    });
    harness = await startTestApp({ llm: false, access, features: [handlers] });
    await harness.channel!.press({ buttonId: "approve:1", userId: "intruder" });
    expect(seen).toEqual([]);
    await harness.channel!.press({ buttonId: "approve:1" });
    await harness.channel!.press({ buttonId: "choice:2" });
    expect(seen).toEqual(["first:approve:1", "first:choice:2", "second:choice:2"]);
  });
});
