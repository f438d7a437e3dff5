import type { RequestMessage } from "./types.js";

/**
 * Frozen request messages (issue 35, hot path): every LLM call of a turn sends the system prompt, the chat's history
 * and the turn so far again. A message frozen whole — the object, its tool calls and each call's function — can't
 * change, so the same object is the same text: what was derived from it (its redacted copy, its JSON bytes) holds for
 * as long as the object lives, checked by `===` alone. The layers that keep such things (`src/llm/redacting-model.ts`,
 * `src/llm/request-body.ts`) still derive afresh for a message that is not frozen: freezing makes them faster,
 * never right or wrong.
 */
export function freezeMessage<T extends RequestMessage>(message: T): T {
  if ("tool_calls" in message && message.tool_calls) {
    for (const call of message.tool_calls) {
      Object.freeze(call.function);
      Object.freeze(call);
    }
    Object.freeze(message.tool_calls);
  }
  return Object.freeze(message);
}

/** The message and everything in it is frozen (what `freezeMessage` does): it can't have changed since it was seen. */
export function isFrozenMessage(message: RequestMessage): boolean {
  if (!Object.isFrozen(message)) return false;
  // Parts (a photo's data URL) are sent for one turn only: never kept, whatever their state.
  if (Array.isArray(message.content)) return false;
  if (!("tool_calls" in message) || !message.tool_calls) return true;
  if (!Object.isFrozen(message.tool_calls)) return false;
  for (const call of message.tool_calls)
    if (!Object.isFrozen(call) || !Object.isFrozen(call.function)) return false;
  return true;
}

/**
 * How many of `messages`' first messages are the same frozen objects as the first `frozen` of `before` (a previous
 * request of the same conversation): compared by reference only, an array of pointers read in order.
 */
export function sameFrozenPrefix(
  messages: readonly RequestMessage[],
  before: readonly RequestMessage[],
  frozen: number,
): number {
  const limit = Math.min(messages.length, frozen);
  let index = 0;
  while (index < limit && messages[index] === before[index]) index++;
  return index;
}

/** `from` plus how many messages after it are frozen whole, in a row. */
export function frozenRun(messages: readonly RequestMessage[], from: number): number {
  let index = from;
  while (index < messages.length && isFrozenMessage(messages[index]!)) index++;
  return index;
}
