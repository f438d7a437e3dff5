import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentDirectory } from "../../src/core/agents.js";
import { type CommandContext, parseCommand, type SlashCommand } from "../../src/core/commands.js";
import type { InboundMessage } from "../../src/core/types.js";
import { silentLogger } from "../../src/log/logger.js";
import { keyForNote, memoryCommands } from "../../src/memory/memory-commands.js";
import { openMemory, tempDir, testConfig } from "./helpers.js";

const message = (text: string, chatId = "100"): InboundMessage => ({
  channel: "telegram",
  chatId,
  messageId: String(Math.random()),
  userId: "7",
  userName: "owner",
  text,
  isDirect: true,
  mentionsBot: false,
  attachments: [],
  receivedAt: Date.now(),
});

describe("memory slash commands (no LLM configured)", () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    temp = tempDir();
  });
  afterEach(() => temp.cleanup());

  function setup() {
    const config = testConfig(temp.dir, {
      agents: { main: {}, work: {} },
      routes: [{ match: { chatId: "200" }, agent: "work" }],
    });
    expect(config.llm.embeddingModel).toBeUndefined();
    const { store, memory } = openMemory(config, silentLogger());
    const commands = new Map(
      memoryCommands(memory, new AgentDirectory(config.agents, config.routes, config.llm.model)).map(
        (command) => [command.name, command],
      ),
    );
    const send = async (text: string, chatId?: string): Promise<string> => {
      const parsed = parseCommand(text)!;
      const inbound = message(text, chatId);
      const context: CommandContext = {
        message: inbound,
        sender: { channel: inbound.channel, userId: inbound.userId, role: "owner" },
        sessionKey: `telegram:${inbound.chatId}`,
        args: parsed.args,
        target: { channel: "telegram", chatId: inbound.chatId },
      };
      const reply = await (commands.get(parsed.name) as SlashCommand).run(context);
      return typeof reply === "string" ? reply : reply.text;
    };
    return { store, memory, send };
  }

  it("remembers, lists, searches and forgets", async () => {
    const { store, memory, send } = setup();
    expect(await send("/memory")).toContain("No memories yet");
    expect(await send("/remember")).toContain("Usage: /remember");
    const key = keyForNote("I prefer metric units, always");
    expect(key).toBe("note.i-prefer-metric-units-always");
    expect(await send("/remember I prefer metric units, always")).toBe(
      `Remembered as \`${key}\`. /forget ${key} removes it.`,
    );
    expect(await send("/remember I prefer metric units, always")).toContain("Updated as");
    const listing = await send("/memory");
    expect(listing).toContain("1 memory for agent `main`");
    expect(listing).toContain(`\`${key}\` (core): I prefer metric units, always`);
    const search = await send("/memory metric");
    expect(search).toContain(key);
    expect(search).toMatch(/score \d\.\d{4} — keyword rank 1/);
    expect(await send('/memory "NEAR( unbalanced')).toContain("Nothing in memory matches");
    expect(await send(`/forget ${key}`)).toBe(`Forgot \`${key}\`.`);
    expect(await send(`/forget ${key}`)).toContain("No memory with key");
    expect(memory.count()).toBe(0);
    await memory.close();
    store.close();
  });

  it("uses the agent the chat is routed to", async () => {
    const { store, memory, send } = setup();
    await send("/remember The work VPN is WireGuard", "200");
    expect(memory.list("work")).toHaveLength(1);
    expect(memory.list("main")).toHaveLength(0);
    expect(await send("/memory", "100")).toContain("No memories yet");
    await memory.close();
    store.close();
  });
});
