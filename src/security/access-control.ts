import type { MagpieConfig } from "../config/schema.js";
import type { ChannelAccessConfig } from "../config/sections/channel-access.js";
import type { AccessControl, AccessDecision } from "../core/access.js";
import type { ButtonPress, InboundMessage, InboundSender, ScreenVerdict } from "../core/types.js";
import { Authority } from "./authority.js";
import type { PairingStore } from "./pairing.js";

/** A chat channel's name: a `channels.<name>` section other than the console's. */
type ChatChannelName = Exclude<keyof MagpieConfig["channels"], "console">;

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
    if (!this.isChatChannel(message.channel)) return deny(`unknown channel "${message.channel}"`);
    const rules = this.rulesOf(message.channel);
    return message.isDirect ? this.checkDirect(message, rules) : this.checkGroup(message, rules);
  }

  /**
   * Whether a button press may count: the presser must be allowed to write in that chat (a press is aimed at
   * the bot, so requireMention is met). Never issues pairing codes.
   */
  allowsPress(press: ButtonPress): boolean {
    return this.screen(press) === "allowed";
  }

  /**
   * What `check` would decide for a message from `sender` that mentions the bot, without issuing a pairing code:
   * an unknown DM sender under `dmPolicy: pairing` is `pairing`. Adapters ask it before they read a body.
   */
  screen(sender: InboundSender): ScreenVerdict {
    if (sender.channel === "console") return "allowed";
    if (sender.channel === "web") return this.config.http.dashboard.enabled ? "allowed" : "refused";
    if (!this.isChatChannel(sender.channel)) return "refused";
    const rules = this.rulesOf(sender.channel);
    const asMessage: InboundMessage = {
      ...sender,
      messageId: "",
      text: "",
      mentionsBot: true,
      attachments: [],
      receivedAt: 0,
    };
    if (!sender.isDirect) return this.checkGroup(asMessage, rules).allow ? "allowed" : "refused";
    if (rules.dmPolicy === "pairing") {
      return this.isKnownSender(sender.channel, sender.userId) ? "allowed" : "pairing";
    }
    return this.checkDirect(asMessage, rules).allow ? "allowed" : "refused";
  }

  /** True when `userId` is an owner on `channel` (allowFrom or paired) — the one answer lives in Authority. */
  isKnownSender(channel: string, userId: string): boolean {
    return this.authority.isOwner(channel, userId);
  }

  /**
   * A channel of the catalog: config holds a section for each (the schema builds them from the catalog), so the
   * section's presence answers without this layer importing the channels.
   */
  private isChatChannel(name: string): name is ChatChannelName {
    return name !== "console" && Object.hasOwn(this.config.channels, name);
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
