import { type ChatChannelName, isChatChannel } from "../../channels/catalog.js";
import type { MagpieConfig } from "../config/schema.js";
import type { ChannelAccessConfig } from "../config/sections/channel-access.js";
import type { AccessControl, AccessDecision } from "../core/access.js";
import type { ButtonPress, InboundMessage } from "../core/types.js";
import { Authority } from "./authority.js";
import type { PairingStore } from "./pairing.js";

const deny = (reason: string, reply?: string): AccessDecision => ({
  allow: false,
  reason,
  ...(reply ? { reply } : {}),
});

/** The text an unknown DM sender receives, and nothing else. */
export function pairingReply(channel: string, code: string): string {
  return [
    `Hi! I don't know you yet. Your pairing code is ${code} (valid for 1 hour).`,
    `Ask the owner to run: magpie pair approve ${channel} ${code}`,
    `(or to send "/pair approve ${code}" to me from an account I already know).`,
  ].join("\n");
}

/**
 * Access control for every chat channel (DESIGN.md "Access control"): dmPolicy, allowFrom, groupPolicy,
 * groups, requireMention, and pairing for unknown DM senders, for every channel of the catalog (a name outside
 * it is denied). The local console is always allowed.
 * It runs before the inbox write, so a denied message reaches no LLM, tool or memory.
 */
export class ChannelAccessControl implements AccessControl {
  private readonly authority: Authority;

  constructor(
    private readonly config: MagpieConfig,
    private readonly pairing: PairingStore,
    authority?: Authority,
  ) {
    this.authority = authority ?? new Authority(config, pairing);
  }

  check(message: InboundMessage): AccessDecision {
    if (message.channel === "console") return { allow: true };
    // The web chat exists only behind the signed-in dashboard, whose user is an owner.
    if (message.channel === "web") {
      return this.config.http.dashboard.enabled ? { allow: true } : deny("the dashboard is not enabled");
    }
    if (!isChatChannel(message.channel)) return deny(`unknown channel "${message.channel}"`);
    const rules = this.rulesOf(message.channel);
    return message.isDirect ? this.checkDirect(message, rules) : this.checkGroup(message, rules);
  }

  /**
   * Whether a button press may count: the presser must be allowed to write in that chat (a press is aimed at
   * the bot, so requireMention is met). Never issues pairing codes.
   */
  allowsPress(press: ButtonPress): boolean {
    if (press.channel === "console") return true;
    if (press.channel === "web") return this.config.http.dashboard.enabled;
    if (!isChatChannel(press.channel)) return false;
    const rules = this.rulesOf(press.channel);
    const asMessage: InboundMessage = {
      channel: press.channel,
      chatId: press.chatId,
      threadId: press.threadId,
      messageId: press.messageId ?? "",
      userId: press.userId,
      userName: press.userName,
      text: "",
      isDirect: press.isDirect,
      mentionsBot: true,
      attachments: [],
      receivedAt: 0,
    };
    if (!press.isDirect) return this.checkGroup(asMessage, rules).allow;
    if (rules.dmPolicy === "pairing") return this.isKnownSender(press.channel, press.userId);
    return this.checkDirect(asMessage, rules).allow;
  }

  /** True when `userId` is an owner on `channel` (allowFrom or paired) — the one answer lives in Authority. */
  isKnownSender(channel: string, userId: string): boolean {
    return this.authority.isOwner(channel, userId);
  }

  private rulesOf(channel: ChatChannelName): ChannelAccessConfig {
    return this.config.channels[channel];
  }

  private checkDirect(message: InboundMessage, rules: ChannelAccessConfig): AccessDecision {
    const listed = rules.allowFrom.includes(message.userId);
    switch (rules.dmPolicy) {
      case "disabled":
        return deny("direct messages are disabled (dmPolicy: disabled)");
      case "open":
        return { allow: true };
      case "allowlist":
        return listed ? { allow: true } : deny("sender not in allowFrom (dmPolicy: allowlist)");
      case "pairing": {
        if (this.authority.isOwner(message.channel, message.userId)) return { allow: true };
        const issued = this.pairing.issue({
          channel: message.channel,
          userId: message.userId,
          userName: message.userName,
          chatId: message.chatId,
        });
        if (issued.status === "issued")
          return deny("unknown sender: pairing code issued", pairingReply(message.channel, issued.code));
        if (issued.status === "pending") return deny("unknown sender: pairing code already issued");
        return deny("unknown sender: too many pending pairing codes on this channel");
      }
    }
  }

  private checkGroup(message: InboundMessage, rules: ChannelAccessConfig): AccessDecision {
    if (rules.groupPolicy === "disabled") return deny("groups are disabled (groupPolicy: disabled)");
    if (rules.groupPolicy === "allowlist") {
      const listed =
        rules.groups.includes(message.chatId) ||
        (message.guildId !== undefined && rules.groups.includes(message.guildId));
      if (!listed) return deny("group not in groups (groupPolicy: allowlist)");
    }
    if (rules.requireMention && !message.mentionsBot)
      return deny("group message without a mention of the bot (requireMention)");
    return { allow: true };
  }
}
