import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { denyAllApprovals } from "../../src/core/approvals.js";
import type { ToolCallContext } from "../../src/core/tool-runtime.js";
import { silentLogger } from "../../src/log/logger.js";
import { createRedactor } from "../../src/log/redact.js";
import { memoryForgetTool } from "../../src/tools/memory-forget.js";
import { memoryRecallTool } from "../../src/tools/memory-recall.js";
import { memoryStoreTool } from "../../src/tools/memory-store.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { type OpenAiFake, startOpenAiFake } from "../fakes/openai.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { openMemory, tempDir, testConfig } from "./helpers.js";

const TOOLS = ["memory_store", "memory_recall", "memory_forget"];

describe("memory tools through the tool registry", () => {
  let temp: ReturnType<typeof tempDir>;
  let fake: OpenAiFake;
  beforeEach(async () => {
    temp = tempDir();
    fake = await startOpenAiFake();
  });
  afterEach(async () => {
    await fake.close();
    temp.cleanup();
  });

  function setup() {
    const config = testConfig(temp.dir, {
      llm: { baseUrl: fake.url, embeddingModel: "embed-small", maxRetries: 0 },
    });
    const { store, memory } = openMemory(config, silentLogger());
    const registry = new ToolRegistry({
      config,
      logger: silentLogger(),
      services: { store, redactor: createRedactor(config, {}), memory },
      approvals: denyAllApprovals,
    });
    registry.register(memoryStoreTool, memoryRecallTool, memoryForgetTool);
    let callId = 0;
    const call = async (name: string, args: unknown, agent = "main"): Promise<Record<string, unknown>> => {
      const context: ToolCallContext = ownerCallContext(
        { channel: "telegram", chatId: "1" },
        { agent, userId: "7", sender: { channel: "telegram", userId: "7", role: "owner" } },
      );
      const text = await registry.execute(
        { id: `call_${++callId}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
        TOOLS,
        context,
      );
      return JSON.parse(text);
    };
    return { store, memory, call };
  }

  it("memory_store upserts by key, memory_recall finds it, memory_forget removes it and its vector", async () => {
    const { store, memory, call } = setup();
    expect(
      await call("memory_store", { key: "owner.editor", content: "The owner edits code in Helix." }),
    ).toEqual({
      ok: true,
      key: "owner.editor",
      category: "core",
      action: "created",
      indexed: "keyword+vector",
    });
    expect(
      await call("memory_store", {
        key: "owner.editor",
        content: "The owner switched to Neovim.",
        category: "core",
      }),
    ).toMatchObject({ action: "updated" });
    await call("memory_store", {
      key: "today.weather",
      content: "Heavy rain forecast today.",
      category: "daily",
    });

    const recall = await call("memory_recall", { query: "which editor does the owner use? neovim" });
    expect(recall.mode).toBe("hybrid");
    const results = recall.results as Array<Record<string, unknown>>;
    expect(results[0]).toMatchObject({
      key: "owner.editor",
      content: "The owner switched to Neovim.",
      category: "core",
      matched_by: ["keyword", "vector"],
    });
    expect(typeof results[0]!.score).toBe("number");
    expect(results[0]!.why).toContain("keyword rank 1");

    const id = memory.get("main", "owner.editor")!.id;
    expect(await call("memory_forget", { key: "owner.editor" })).toEqual({
      ok: true,
      key: "owner.editor",
      action: "forgotten",
    });
    expect(store.db.prepare("SELECT COUNT(*) FROM memory_vectors WHERE memory_id = ?").pluck().get(id)).toBe(
      0,
    );
    expect(await call("memory_forget", { key: "owner.editor" })).toEqual({
      ok: false,
      error: { code: "memory.not_found", message: expect.stringContaining("memory_recall") },
    });
    // Memory is per agent: another agent sees nothing.
    expect((await call("memory_recall", { query: "rain" }, "work")).results).toEqual([]);
    await memory.close();
    store.close();
  });

  it("rejects a bad category and defaults the recall limit to 5", async () => {
    const { store, memory, call } = setup();
    const bad = await call("memory_store", { key: "k", content: "c", category: "forever" });
    expect(bad).toMatchObject({ ok: false, error: { code: "tool.invalid_arguments" } });
    for (let i = 0; i < 8; i++)
      await call("memory_store", { key: `plant.${i}`, content: `Plant ${i} needs water weekly.` });
    expect((await call("memory_recall", { query: "plant water" })).results).toHaveLength(5);
    expect((await call("memory_recall", { query: "plant water", limit: 7 })).results).toHaveLength(7);
    await memory.close();
    store.close();
  });
});
