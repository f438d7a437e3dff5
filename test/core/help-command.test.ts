import { afterEach, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { features } from "../../src/app/features.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe("/help", () => {
  it("lists every command once with a single slash, usage where it is one line", async () => {
    // Everything but access control (the recording channel's sender is not on an allowlist).
    harness = await startTestApp({
      llm: false,
      features: features.filter((feature) => feature !== accessFeature),
    });
    await harness.channel!.receive("/help");
    await harness.channel!.waitForSent(1);
    const help = harness.channel!.texts()[0]!;
    expect(help).not.toContain("//");
    for (const line of help.split("\n").slice(1)) expect(line).toMatch(/^\/[a-z][\w-]* ?.* — /);
    expect(help).toContain("/memory [query] — ");
    expect(help).toContain("/approve <id> — ");
    expect(help).toContain("/cron — ");
    expect(help).toContain("/stop [task_id] — ");
  });
});
