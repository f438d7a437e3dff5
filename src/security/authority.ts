import { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import type { AuthorityPort, Role, SenderIdentity } from "../core/identity.js";
import { row } from "../lib/row.js";
import type { Db } from "../store/database.js";

const ownerChatRows = row(
  z.object({ chat_id: z.string().nullable(), user_id: z.string().nullable() }),
  "authority",
);

/** The pairing store's one question this module asks (senders approved with /pair). */
interface ApprovedSenders {
  isApproved(channel: string, userId: string): boolean;
}

type ChannelRules = { allowFrom?: string[]; groups?: string[] };

/**
 * The one place that answers "who is this sender and what may they do" (DESIGN.md → Security → Identities and
 * authority). Used by the router (role of each turn), commands, approvals and questions, the `message` tool,
 * the scheduler's delivery and memory. Owners are listed in `allowFrom` or approved through pairing, per
 * channel; the local console's user is the owner of the box. Everyone else is a guest.
 */
export class Authority implements AuthorityPort {
  constructor(
    private readonly config: MagpieConfig,
    private readonly pairing: ApprovedSenders | null,
    private readonly db: Db | null = null,
  ) {}

  roleOf(channel: string, userId: string): Role {
    if (channel === "console" || channel === "web") return "owner";
    const rules = this.rulesOf(channel);
    if (!rules) return "guest";
    if ((rules.allowFrom ?? []).includes(userId)) return "owner";
    return this.pairing?.isApproved(channel, userId) ? "owner" : "guest";
  }

  identify(channel: string, userId: string, userName?: string): SenderIdentity {
    return { channel, userId, ...(userName ? { userName } : {}), role: this.roleOf(channel, userId) };
  }

  isOwner(channel: string, userId: string): boolean {
    return this.roleOf(channel, userId) === "owner";
  }

  /**
   * The current chat; a configured group of the target's channel; an owner's DM (on Telegram a DM's chat id is
   * the user's id; elsewhere a direct chat where an owner has written to the bot, as the inbox records). Checked
   * again at delivery time, so an allowlist change between a job's creation and its run takes effect.
   */
  mayDeliver(
    current: { channel: string; chatId: string } | null,
    target: { channel: string; chatId: string },
  ): boolean {
    if (current && current.channel === target.channel && current.chatId === target.chatId) return true;
    if (target.channel === "console") return true;
    const rules = this.rulesOf(target.channel);
    if (!rules) return false;
    if ((rules.groups ?? []).includes(target.chatId)) return true;
    if (this.isOwner(target.channel, target.chatId)) return true;
    return this.ownerDirectChats(target.channel).has(target.chatId);
  }

  private ownerDirectChats(channel: string): Set<string> {
    const chats = new Set<string>();
    if (!this.db) return chats;
    const rows = ownerChatRows.all(
      this.db
        .prepare(
          `SELECT DISTINCT json_extract(payload, '$.chatId') AS chat_id, json_extract(payload, '$.userId') AS user_id
         FROM inbox WHERE channel = ? AND json_extract(payload, '$.isDirect') = 1`,
        )
        .all(channel),
    );
    for (const row of rows) {
      if (row.chat_id && row.user_id && this.isOwner(channel, row.user_id)) chats.add(row.chat_id);
    }
    return chats;
  }

  private rulesOf(channel: string): ChannelRules | undefined {
    const channels = this.config.channels as Record<string, ChannelRules | undefined>;
    return channels[channel];
  }
}
