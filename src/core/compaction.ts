import type { Logger } from "pino";
import { estimateMessageTokens } from "../llm/tokens.js";
import type { ChatMessage, ChatModel } from "../llm/types.js";
import type { HistoryRepository, StoredMessage } from "../store/history.js";
import type { SpendPort, SpendScope } from "./spend.js";

const SUMMARY_INSTRUCTION =
  "Summarize the conversation below for your own future reference. Keep facts about the user, decisions, " +
  "results of actions, open tasks and preferences; drop small talk. At most 250 words, plain text.";

/**
 * One compaction summarizes at most this many history budgets of the oldest messages. A session past its budget
 * by one turn has about half a budget to summarize, so this bounds only a backlog.
 */
const SUMMARIZED_BUDGETS = 4;

/** Picks the most recent messages within `budget` tokens, starting at a user message (no orphaned tool results). */
export function recentWithinBudget(messages: StoredMessage[], budget: number): StoredMessage[] {
  let total = 0;
  let start = messages.length;
  for (let index = messages.length - 1; index >= 0; index--) {
    total += messages[index]!.tokens;
    if (total > budget) break;
    start = index;
  }
  while (start < messages.length && messages[start]!.message.role !== "user") start++;
  return messages.slice(start);
}

export interface CompactionResult {
  summary: string;
  removed: number;
}

/**
 * When a session's history passes `budget` tokens, summarizes everything but the most recent half of the
 * budget into the session summary (the oldest `SUMMARIZED_BUDGETS` budgets of it per call). Returns null when
 * nothing was compacted.
 */
export async function compactHistory(input: {
  history: HistoryRepository;
  sessionKey: string;
  model: ChatModel;
  modelName: string;
  budget: number;
  logger: Logger;
  signal?: AbortSignal;
  /** The budgets (and the ledger row's scope): the summary is an LLM call of the turn that made the history long. */
  spend?: { port: SpendPort; scope: SpendScope } | null;
}): Promise<CompactionResult | null> {
  // Only what the budget holds is read (then whether anything is older): a turn's compaction check costs the
  // same whatever the session holds.
  // Most turns leave the history within its budget: that is learnt from the token counts alone.
  if (!input.history.exceeds(input.sessionKey, input.budget)) return null;
  const recent = input.history.newest(input.sessionKey, input.budget);
  if (!recent.more) return null;
  const keep = recentWithinBudget(recent.messages, Math.floor(input.budget / 2));
  // The oldest part first, at most SUMMARIZED_BUDGETS budgets of it: a backlog (compactions held back by a cap)
  // is summarized a part per turn, never sent to the model whole.
  const older = input.history.oldest(
    input.sessionKey,
    keep[0]?.id ?? Number.MAX_SAFE_INTEGER,
    input.budget * SUMMARIZED_BUDGETS,
  );
  if (older.length === 0) return null;
  const previous = input.history.summary(input.sessionKey);
  const transcript = older.map((item) => renderForSummary(item.message)).join("\n");
  const messages: ChatMessage[] = [
    { role: "system", content: SUMMARY_INSTRUCTION },
    {
      role: "user",
      content: `${previous ? `Earlier summary:\n${previous}\n\n` : ""}Conversation:\n${transcript}`,
    },
  ];
  const { spend } = input;
  if (spend && !spend.port.beforeCall(spend.scope).allowed) {
    // A cap is reached: the history stays long (turns send only its recent part) rather than spend past it.
    input.logger.info({ session: input.sessionKey }, "history-compaction-skipped-budget");
    return null;
  }
  try {
    // The provider files the call under the turn's scope (ledger row and `llmCall` event).
    const result = await input.model.complete(
      { model: input.modelName, messages },
      { signal: input.signal, ...(spend ? { scope: spend.scope } : {}) },
    );
    const summary = result.content?.trim();
    if (!summary) return null;
    input.history.compact(input.sessionKey, older[older.length - 1]!.id, summary);
    return { summary, removed: older.length };
  } catch (error) {
    input.logger.warn({ err: error, session: input.sessionKey }, "history-compaction-failed");
    return null;
  }
}

function renderForSummary(message: ChatMessage): string {
  if (message.role === "tool") return `[tool result] ${(message.content ?? "").slice(0, 500)}`;
  if (message.role === "assistant" && message.tool_calls?.length) {
    const calls = message.tool_calls.map(
      (call) => `${call.function.name}(${call.function.arguments.slice(0, 200)})`,
    );
    return `assistant called: ${calls.join(", ")}${message.content ? ` — ${message.content}` : ""}`;
  }
  return `${message.role}: ${message.content ?? ""}`;
}

export { estimateMessageTokens };
