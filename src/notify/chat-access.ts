import type { MagpieConfig } from "../config/schema.js";
import type { ToolServices } from "../tools/context.js";

/** Optional service the access-control feature may register as `services.access` to answer precisely. */
interface ChatAccessService {
  isChatAllowed?(channel: string, chatId: string): boolean;
}

/** The access feature's pairing store (`services.pairing`): senders approved with /pair. */
interface PairingService {
  isApproved?(channel: string, userId: string): boolean;
}

/**
 * May the bot post into `chatId` on `channel` on its own initiative? Yes for the current chat, for chats an
 * access service approves, for DMs of senders approved by pairing, and for the channel's configured `groups`
 * and `allowFrom` ids (on Telegram a DM's chat id is the user's id).
 */
export function isChatAllowed(
  config: MagpieConfig,
  services: ToolServices,
  current: { channel: string; chatId: string },
  target: { channel: string; chatId: string },
): boolean {
  if (current.channel === target.channel && current.chatId === target.chatId) return true;
  const access = services.access as ChatAccessService | undefined;
  if (access?.isChatAllowed?.(target.channel, target.chatId)) return true;
  // A DM's chat id is the sender's user id on Telegram, so a paired sender's DM is allowed.
  const pairing = services.pairing as PairingService | undefined;
  if (pairing?.isApproved?.(target.channel, target.chatId)) return true;
  const channels = config.channels as Record<string, { allowFrom?: string[]; groups?: string[] } | undefined>;
  const settings = channels[target.channel];
  if (!settings) return false;
  return (
    (settings.groups ?? []).includes(target.chatId) || (settings.allowFrom ?? []).includes(target.chatId)
  );
}
