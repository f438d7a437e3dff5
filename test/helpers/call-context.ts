import type { ToolCallContext } from "../../src/core/tool-runtime.js";
import type { ReplyTarget } from "../../src/core/types.js";

/**
 * The context of a tool call in an owner's own chat turn (an owner is there to ask), for tests that call the
 * registry directly. `overrides` change any field.
 */
export function ownerCallContext(
  target: ReplyTarget = { channel: "test", chatId: "chat" },
  overrides: Partial<ToolCallContext> = {},
): ToolCallContext {
  const sender = { channel: target.channel, userId: "owner", role: "owner" as const };
  return {
    sessionKey: `${target.channel}:${target.chatId}`,
    agent: "main",
    target,
    userId: sender.userId,
    signal: new AbortController().signal,
    depth: 0,
    origin: "user",
    sender,
    canAsk: true,
    approver: { target: { channel: target.channel, chatId: target.chatId }, identity: sender },
    ...overrides,
  };
}
