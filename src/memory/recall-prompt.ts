import { estimateTokens } from "../llm/tokens.js";
import type { MemoryRecord, RecallHit } from "./types.js";

/** Tells the agent to keep its memory up to date; added when the agent has the memory tools. */
export const MEMORY_INSTRUCTION =
  "You have long-term memory that lasts across chats and restarts. When you learn a durable fact or " +
  "preference about the owner, their machines or their projects, save it with memory_store (a short stable " +
  'key such as "owner.timezone", category "core"); store the same key again to update it and use ' +
  "memory_forget for facts that turned out wrong. Use memory_recall when earlier knowledge might help. " +
  "Recalled memories can be outdated: what the owner says now wins.";

export interface RecallBudget {
  /** Tokens for the memory lines (headings included), core and relevant together. */
  maxTokens: number;
  /** Part of `maxTokens` for core memories. */
  coreTokens: number;
}

const formatDate = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 10);

const coreLine = (memory: MemoryRecord): string => `- ${memory.key}: ${memory.content}`;
const hitLine = (hit: RecallHit): string =>
  `- ${hit.memory.key} (${hit.memory.category}, ${formatDate(hit.memory.updatedAt)}): ${hit.memory.content}`;

/** Adds lines under a heading while they fit in `budget` tokens; returns the lines and tokens used. */
function fill(heading: string, lines: string[], budget: number): { lines: string[]; used: number } {
  const headingTokens = estimateTokens(heading);
  const kept: string[] = [];
  let used = headingTokens;
  for (const line of lines) {
    const tokens = estimateTokens(line);
    // A memory that doesn't fit is skipped, not cut: half a fact misleads.
    if (used + tokens > budget) continue;
    kept.push(line);
    used += tokens;
  }
  return kept.length > 0 ? { lines: [heading, ...kept], used } : { lines: [], used: 0 };
}

/**
 * The memory section of a system prompt: core memories first (within `coreTokens`), then the memories
 * relevant to the message, all within `maxTokens`. The instruction is a fixed text outside the budget.
 */
export function renderRecall(input: {
  core: MemoryRecord[];
  hits: RecallHit[];
  budget: RecallBudget;
  instruction?: string;
}): string | null {
  const core = fill(
    "Known about the owner (core memories):",
    input.core.map(coreLine),
    Math.min(input.budget.coreTokens, input.budget.maxTokens),
  );
  const shown = new Set(core.lines);
  const relevant = fill(
    "Memories that may be relevant to this message:",
    input.hits.filter((hit) => !shown.has(coreLine(hit.memory))).map(hitLine),
    input.budget.maxTokens - core.used,
  );
  const body = [...core.lines, ...relevant.lines];
  const parts = [input.instruction, body.length > 0 ? body.join("\n") : undefined].filter(Boolean);
  return parts.length > 0 ? `## Long-term memory\n${parts.join("\n\n")}` : null;
}
