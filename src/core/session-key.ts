import type { InboundMessage, ReplyTarget } from "./types.js";

/** `<channel>:<chatId>` or `<channel>:<chatId>:<threadId>`. DM chat ids are per person on every platform. */
export function sessionKeyOf(message: Pick<InboundMessage, "channel" | "chatId" | "threadId">): string {
  return message.threadId
    ? `${message.channel}:${message.chatId}:${message.threadId}`
    : `${message.channel}:${message.chatId}`;
}

/** The reply target for an inbound message: same chat and thread, threaded to the message. */
export function replyTargetOf(message: InboundMessage): ReplyTarget {
  return {
    channel: message.channel,
    chatId: message.chatId,
    threadId: message.threadId,
    replyToMessageId: message.messageId,
  };
}

/** Parses a session key back into its target (no reply-to). */
export function targetOfSessionKey(sessionKey: string): ReplyTarget {
  const [channel = "", chatId = "", ...rest] = sessionKey.split(":");
  const threadId = rest.length > 0 ? rest.join(":") : undefined;
  return { channel, chatId, threadId };
}
