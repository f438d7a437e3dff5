import { z } from "zod";
import { CHAT_CHANNEL_NAMES } from "../../channels/catalog.js";
import type { ToolContext } from "./context.js";
import { defineTool, ToolError } from "./define-tool.js";
import { prepareOutboundFile } from "./message-file.js";
import { refuseLeakingFile, refuseOutboundLeak } from "./outbound-check.js";

const DELIVERY_WAIT_MS = 10_000;

/**
 * The one delivery rule (`services.authority`, from the access feature): the current chat, owners' chats and
 * allowed groups. Without it, only the current chat.
 */
function mayPost(context: ToolContext, target: { channel: string; chatId: string }): boolean {
  const authority = context.services.authority;
  if (authority) return authority.mayDeliver(context.target, target);
  return context.target.channel === target.channel && context.target.chatId === target.chatId;
}

export const messageTool = defineTool({
  name: "message",
  description:
    "Send a message to a chat: this chat by default, or another channel/chat (e.g. post to the team's Slack channel). Only chats the access rules allow. With `file`, a workspace file goes along: a picture (PNG, JPEG, WebP) as a photo, anything else as a document — e.g. a screenshot just taken.",
  inputSchema: z.object({
    content: z.string().min(1).describe("The message text (Markdown)."),
    channel: z
      .string()
      .min(1)
      .optional()
      .describe(`${CHAT_CHANNEL_NAMES.join(", ")} … (default: this chat's channel).`),
    chat_id: z.string().min(1).optional().describe("Chat id in that channel (default: this chat)."),
    file: z
      .string()
      .min(1)
      .optional()
      .describe("Path of a file to send with the text, relative to the workspace or absolute."),
  }),
  risk: "medium",
  async execute(input, context) {
    const messaging = context.services.messaging;
    if (!messaging) throw new ToolError("message.unavailable", "Messaging is not available in this Magpie.");
    const channel = input.channel ?? context.target.channel;
    const sameChannel = channel === context.target.channel;
    const chatId = input.chat_id ?? (sameChannel ? context.target.chatId : undefined);
    if (!chatId) {
      throw new ToolError("message.chat_id_required", `Sending to channel "${channel}" needs chat_id.`);
    }
    const channels = messaging.channelNames();
    if (!channels.includes(channel)) {
      throw new ToolError(
        "message.unknown_channel",
        `Channel "${channel}" is not connected. Connected channels: ${channels.join(", ") || "none"}.`,
      );
    }
    if (!mayPost(context, { channel, chatId })) {
      throw new ToolError(
        "message.chat_not_allowed",
        `Chat ${chatId} on ${channel} is not one Magpie may post to: only this chat, owners' chats and the channel's configured groups (channels.${channel}.groups) or owners (channels.${channel}.allowFrom).`,
      );
    }
    const isCurrentChat = sameChannel && chatId === context.target.chatId;
    const target =
      isCurrentChat && context.target.threadId
        ? { channel, chatId, threadId: context.target.threadId }
        : { channel, chatId };
    refuseOutboundLeak(context, [{ kind: "message", value: input.content }]);
    // Checked now, before anything is queued: a refused or oversized file sends nothing at all.
    const file = input.file ? await prepareOutboundFile(context, input.file, channel) : undefined;
    if (file && context.isTainted?.()) await refuseLeakingFile(context, file.path);
    const outboxId = messaging.messenger.send(
      target,
      { text: input.content, ...(file ? { file } : {}) },
      "message",
    );
    const status = await messaging.messenger.waitForDelivery(outboxId, DELIVERY_WAIT_MS);
    if (status === "failed") {
      throw new ToolError(
        "message.failed",
        `The message to ${channel}:${chatId} could not be delivered (outbox #${outboxId}).`,
      );
    }
    return {
      ok: true,
      channel,
      chat_id: chatId,
      status: status === "sent" ? "sent" : "queued",
      outbox_id: outboxId,
      ...(file ? { file: { name: file.name, sent_as: file.kind } } : {}),
    };
  },
});
