import type { ChatMessage } from "./types.js";

/** Rough token estimate (≈ 4 characters per token) — good enough for budgets, no tokenizer to load. */
export function estimateTokens(text: string | null | undefined): number {
  return text ? Math.ceil(text.length / 4) : 0;
}

export function estimateMessageTokens(message: ChatMessage): number {
  let tokens = 4 + estimateTokens(message.content);
  if (message.role === "assistant" && message.tool_calls) {
    for (const call of message.tool_calls)
      tokens += estimateTokens(call.function.name + call.function.arguments) + 4;
  }
  return tokens;
}
