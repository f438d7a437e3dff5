import type { AgentDirectory } from "../core/agents.js";
import type { CommandContext, SlashCommand } from "../core/commands.js";
import type { MemoryService } from "./memory-service.js";
import type { MemoryRecord, RecallHit } from "./types.js";

const SHOWN = 10;

const preview = (text: string, max = 160): string => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

const memoryLine = (memory: MemoryRecord): string =>
  `• \`${memory.key}\` (${memory.category}): ${preview(memory.content)}`;
const hitLine = (hit: RecallHit): string =>
  `${memoryLine(hit.memory)}\n  score ${hit.score.toFixed(4)} — ${hit.why}`;

/** A key for `/remember` text: its first words, so remembering the same thing twice updates one memory. */
export function keyForNote(text: string): string {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const slug = words.slice(0, 6).join("-").slice(0, 60);
  return `note.${slug || "untitled"}`;
}

const GUEST_REFUSAL = "Long-term memory belongs to the owners of this bot; guests can't read or change it.";

/**
 * `/memory [query]`, `/remember <text>`, `/forget <key>` — deterministic, no LLM needed. Owner-only: the
 * router refuses guests, and each command checks the sender again, as the memory tools do.
 */
export function memoryCommands(service: MemoryService, directory: AgentDirectory): SlashCommand[] {
  const agentOf = (context: CommandContext): string => directory.forMessage(context.message).name;
  return [
    {
      name: "memory",
      description: "Show long-term memories, or search them",
      usage: "/memory [query]",
      ownerOnly: true,
      async run(context) {
        if (context.sender.role !== "owner") return GUEST_REFUSAL;
        const agent = agentOf(context);
        if (!context.args) {
          const total = service.count(agent);
          if (total === 0) return "No memories yet. Save one with /remember <text>.";
          const core = service.list(agent, { category: "core", limit: SHOWN });
          const recent = service.list(agent, { limit: SHOWN }).filter((memory) => memory.category !== "core");
          const lines = [`${total} memor${total === 1 ? "y" : "ies"} for agent \`${agent}\`.`];
          if (core.length > 0) lines.push("", "**Core**", ...core.map(memoryLine));
          if (recent.length > 0) lines.push("", "**Recent**", ...recent.map(memoryLine));
          lines.push("", "Search with /memory <query>; remove one with /forget <key>.");
          return lines.join("\n");
        }
        const result = await service.recall({
          agent,
          query: context.args,
          role: context.sender.role,
          limit: 5,
          touch: false,
        });
        if (result.hits.length === 0) return `Nothing in memory matches "${preview(context.args, 80)}".`;
        const note =
          result.mode === "keyword" && result.fallbackReason
            ? "\n\n(keyword search only: the embeddings endpoint failed)"
            : "";
        return `${result.hits.map(hitLine).join("\n")}${note}`;
      },
    },
    {
      name: "remember",
      description: "Save a fact to long-term memory",
      usage: "/remember <text>",
      ownerOnly: true,
      async run(context) {
        if (context.sender.role !== "owner") return GUEST_REFUSAL;
        if (!context.args) return "Usage: /remember <text> — e.g. /remember I prefer metric units";
        const key = keyForNote(context.args);
        const outcome = await service.store({
          agent: agentOf(context),
          key,
          content: context.args,
          category: "core",
          role: context.sender.role,
        });
        return `${outcome.created ? "Remembered" : "Updated"} as \`${key}\`. /forget ${key} removes it.`;
      },
    },
    {
      name: "forget",
      description: "Remove a long-term memory by key",
      usage: "/forget <key>",
      ownerOnly: true,
      run(context) {
        if (context.sender.role !== "owner") return GUEST_REFUSAL;
        if (!context.args) return "Usage: /forget <key> — /memory lists the keys.";
        const removed = service.forget(agentOf(context), context.args, context.sender.role);
        return removed
          ? `Forgot \`${removed.key}\`.`
          : `No memory with key \`${context.args}\`. /memory lists the keys.`;
      },
    },
  ];
}
