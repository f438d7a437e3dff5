import { afterEach, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { orderFeatures } from "../../src/app/assemble.js";
import { defineFeature, type MagpieFeature } from "../../src/app/feature.js";
import { features } from "../../src/app/features.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

/** A seeded shuffle (mulberry32 + Fisher–Yates): the same seed gives the same order on every run. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const result = [...items];
  for (let index = result.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [result[index], result[other]] = [result[other]!, result[index]!];
  }
  return result;
}

/** What a running app shows of its features: their order, commands, tools, /help and one answered message. */
async function observe(list: MagpieFeature[]) {
  harness = await startTestApp({ features: list });
  const { app, channel, llm, dataDir } = harness;
  const prompts: string[] = [];
  const offered: string[][] = [];
  llm!.script(
    reply.text("Hello back.", (body) => {
      // The clock line and the temporary data folder differ between runs; everything else must not.
      prompts.push(String(body.messages[0]?.content).replaceAll(dataDir, "<data>").replace(/\d/g, "#"));
      offered.push((body.tools ?? []).map((tool) => tool.function.name));
    }),
  );
  await channel!.receive("/help");
  await channel!.waitForSent(1);
  await channel!.receive("hello");
  await channel!.waitForSent(2);
  llm!.assertDone();
  const seen = {
    order: app.features.map((feature) => feature.name),
    commands: app.commands.list().map((command) => command.name),
    tools: app.tools.enabledNames(),
    texts: channel!.texts(),
    prompts,
    offered,
  };
  await harness.stop();
  harness = undefined;
  return seen;
}

describe("features are assembled by what they need and provide, not by list order", () => {
  it("four shuffles of the feature list give the same order, commands, tools, /help and answer", async () => {
    // Everything but access control (the recording channel's sender is on no allowlist).
    const list = features.filter((feature) => feature !== accessFeature);
    const expected = await observe(list);
    expect(expected.texts[1]).toBe("Hello back.");
    expect(expected.commands).toEqual(expect.arrayContaining(["help", "memory", "cron", "usage", "approve"]));
    for (const seed of [1, 2, 3, 4]) {
      const order = shuffled(list, seed);
      expect(order.map((feature) => feature.name)).not.toEqual(list.map((feature) => feature.name));
      expect(await observe(order)).toEqual(expected);
    }
  });

  it("with access control too, any shuffle sets up in the one order: every provider before its users", () => {
    const catalogue = features.map((feature) => feature.name);
    const expected = orderFeatures(features, ["notifier", "access", "authority", "approvals"], catalogue);
    expect(expected.map((feature) => feature.name)).toEqual(catalogue);
    for (const seed of [5, 6, 7, 8, 9]) {
      const order = orderFeatures(shuffled(features, seed), ["notifier"], catalogue);
      expect(order).toEqual(expected);
    }
    // A provider listed after its user is still set up first.
    const provider = defineFeature({ name: "z-provider", provides: ["memory"], setup: () => {} });
    const user = defineFeature({ name: "a-user", needs: ["memory"], setup: () => {} });
    expect(orderFeatures([user, provider], [], catalogue).map((feature) => feature.name)).toEqual([
      "z-provider",
      "a-user",
    ]);
  });

  it("a feature whose needed port no enabled feature provides stops start-up with one sentence naming both", async () => {
    const needsNotifier = defineFeature({ ...usageFeature, name: "usage", needs: ["notifier"] });
    expect(() => orderFeatures([needsNotifier], [])).toThrow(
      "feature 'usage' needs 'notifier', which no enabled feature provides",
    );
    const needsMemory = defineFeature({ name: "recall-report", needs: ["memory"], setup: () => {} });
    await expect(startTestApp({ llm: false, features: [needsMemory] })).rejects.toThrow(
      "feature 'recall-report' needs 'memory', which no enabled feature provides",
    );
  });
});
