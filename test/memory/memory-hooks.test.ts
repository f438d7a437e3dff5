import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentDirectory } from "../../src/core/agents.js";
import { estimateTokens } from "../../src/llm/tokens.js";
import { silentLogger } from "../../src/log/logger.js";
import { memoryHooks } from "../../src/memory/memory-hooks.js";
import { MEMORY_INSTRUCTION } from "../../src/memory/recall-prompt.js";
import { openMemory, tempDir, testConfig } from "./helpers.js";

describe("automatic recall and conversation memory", () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    temp = tempDir();
  });
  afterEach(() => temp.cleanup());

  function setup(extra: Record<string, unknown> = {}) {
    const config = testConfig(temp.dir, extra);
    const { store, memory } = openMemory(config, silentLogger());
    const directory = new AgentDirectory(config.agents, config.routes, config.llm.model);
    return { store, memory, hooks: memoryHooks(memory, config, directory, silentLogger()) };
  }

  /** The memory lines of a recall text (what the budget covers: everything after the instruction). */
  const budgetedPart = (text: string): string => text.split(`${MEMORY_INSTRUCTION}\n\n`)[1] ?? "";

  it("adds core memories and relevant ones within the token budget, and tells the agent to store facts", async () => {
    const { store, memory, hooks } = setup({
      agent: { recall: { limit: 5, maxTokens: 120, coreTokens: 40 } },
    });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "owner.name",
      content: "The owner is called Rita.",
    });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "owner.units",
      content: "Rita prefers metric units and 24-hour time.",
    });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "owner.long",
      content: `Rita's reading list: ${"a long title, ".repeat(40)}`,
    });
    for (let i = 0; i < 20; i++) {
      await memory.store({
        agent: "main",
        role: "owner",
        key: `backup.${i}`,
        content: `Backup run ${i} of the photo library finished on the NAS.`,
        category: "daily",
      });
    }
    const text = await hooks.recall!({
      role: "owner",
      sessionKey: "console:1",
      agent: "main",
      text: "did the NAS backup finish?",
    });
    expect(text).toContain(MEMORY_INSTRUCTION);
    expect(text).toContain("owner.name: The owner is called Rita.");
    expect(text).not.toContain("reading list"); // too long for the core budget: skipped, not cut
    expect(text).toMatch(/backup\.\d+ \(daily, \d{4}-\d\d-\d\d\): Backup run/);
    const part = budgetedPart(String(text));
    expect(estimateTokens(part)).toBeLessThanOrEqual(120 + 2); // + the line breaks between counted lines
    const coreLines = part.split("Memories that may be relevant")[0]!;
    expect(estimateTokens(coreLines)).toBeLessThanOrEqual(40 + 1);
    expect(part.match(/^- backup\./gm)?.length).toBeLessThanOrEqual(5);
    await memory.close();
    store.close();
  });

  it("stays within a tiny budget and leaves out the instruction when the agent can't store memories", async () => {
    const { store, memory, hooks } = setup({
      agents: { main: { toolSet: "default" } },
      agent: { recall: { maxTokens: 10, coreTokens: 10 } },
    });
    await memory.store({
      agent: "main",
      role: "owner",
      key: "k",
      content: "A memory that is far longer than ten tokens of budget.",
    });
    const text = await hooks.recall!({
      sessionKey: "console:1",
      agent: "main",
      text: "memory budget",
      role: "owner",
    });
    expect(text).toBeNull();
    await memory.close();
    store.close();
  });

  it("keeps a compacted summary as a conversation memory that survives /reset", async () => {
    const { store, memory, hooks } = setup();
    store.history.ensureSession("telegram:42", "main");
    await hooks.onCompacted!({
      role: "owner",
      sessionKey: "telegram:42",
      agent: "main",
      summary: "We debugged the Zigbee bridge; the fix was a new USB extension cable.",
    });
    store.history.reset("telegram:42");
    const recall = await memory.recall({ agent: "main", role: "owner", query: "zigbee bridge fix" });
    expect(recall.hits[0]!.memory.category).toBe("conversation");
    expect(recall.hits[0]!.memory.key).toMatch(/^conversation:telegram:42:\d{4}-/);
    await memory.close();
    store.close();
  });
});
