import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import type { AgentDirectory } from "../core/agents.js";
import type { AgentHooks } from "../core/hooks.js";
import type { UntrustedSource } from "../core/turn-provenance.js";
import type { ProvenanceStore } from "../security/provenance-store.js";
import type { MemoryService } from "./memory-service.js";
import { MEMORY_INSTRUCTION, renderRecall } from "./recall-prompt.js";

/** True when `agent`'s tool set includes memory_store (only then is it told to store facts). */
function canStore(directory: AgentDirectory, agent: string): boolean {
  const toolSet = directory.get(agent)?.toolSet;
  if (toolSet === "full") return true;
  return Array.isArray(toolSet) && toolSet.includes("memory_store");
}

/**
 * Automatic recall before each turn, and conversation summaries kept as memories after compaction. A
 * guest's turn recalls nothing (core memories included) and is not told to store facts; a session in which
 * a guest ever had a turn leaves no summaries behind, so text a guest wrote can't reach owners' turns.
 */
export function memoryHooks(
  service: MemoryService,
  config: MagpieConfig,
  directory: AgentDirectory,
  logger: Logger,
  /** Memories stored by a tainted turn taint the turn that recalls them (the rule of two). */
  provenance?: ProvenanceStore,
): AgentHooks {
  const budget = config.agent.recall;
  return {
    async recall({ sessionKey, agent, text, role }) {
      if (role !== "owner") {
        service.noteGuestTurn(sessionKey);
        return null;
      }
      const instruction = canStore(directory, agent) ? MEMORY_INSTRUCTION : undefined;
      try {
        const core = budget.coreTokens > 0 ? service.core(agent, role) : [];
        const hits =
          budget.limit > 0 && text.trim()
            ? (await service.recall({ agent, query: text, role, limit: budget.limit })).hits
            : [];
        const rendered = renderRecall({ core, hits, budget, instruction });
        const tainted = provenance?.taintedMemories(agent);
        if (!rendered || !tainted?.size) return rendered;
        const untrusted: UntrustedSource[] = [...core, ...hits.map((hit) => hit.memory)]
          .filter((memory) => tainted.has(memory.key) && rendered.includes(memory.key))
          .map((memory) => ({
            kind: "memory",
            label: `memory "${memory.key.slice(0, 80)}" (stored after reading ${tainted.get(memory.key)?.[0]?.label ?? "untrusted content"})`,
          }));
        return untrusted.length > 0 ? { text: rendered, untrusted } : rendered;
      } catch (error) {
        // A broken recall must not cost the user their answer.
        logger.warn({ code: "memory.recall_failed", err: error, agent }, "Automatic memory recall failed");
        return renderRecall({ core: [], hits: [], budget, instruction });
      }
    },

    async onCompacted({ sessionKey, agent, summary, role }) {
      if (!summary.trim()) return;
      if (role !== "owner" || service.hadGuest(sessionKey)) {
        logger.info(
          { code: "memory.summary_not_stored", session: sessionKey, agent },
          "A guest took part in this conversation: its summary is not kept as an owners' memory",
        );
        return;
      }
      // One memory per compaction: the summary stays searchable after /reset wipes the session.
      const key = `conversation:${sessionKey}:${new Date().toISOString()}`;
      await service.store({ agent, key, content: summary, category: "conversation", role });
    },
  };
}
