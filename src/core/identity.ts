/**
 * Who a turn acts for (DESIGN.md → Security → "Identities and authority"). An owner of a channel is in its
 * `allowFrom` or approved through pairing; anyone else who reaches the bot is a guest. Authority follows the
 * sender, never the chat.
 */
export type Role = "owner" | "guest";

export interface SenderIdentity {
  channel: string;
  userId: string;
  userName?: string;
  role: Role;
}

/** What started a turn. */
export type TurnOrigin = "user" | "schedule" | "spawn" | "delegate" | "event";

/** The identity used for work the owner set up outside any chat (config and CLI jobs, local console). */
export function ownerIdentity(channel = "local", userId = "owner"): SenderIdentity {
  return { channel, userId, role: "owner" };
}

/** Answers "who is this sender and what may they do" (implemented in `src/security/authority.ts`). */
export interface AuthorityPort {
  /** The sender's role on a channel. */
  roleOf(channel: string, userId: string): Role;
  /**
   * May the bot post into `target` on behalf of a turn that runs in `current`? The rule of the `message`
   * tool, used by job delivery too: the current chat, owners' chats and allowed groups.
   */
  mayDeliver(
    current: { channel: string; chatId: string } | null,
    target: { channel: string; chatId: string },
  ): boolean;
}

/** Everyone is an owner and every chat a delivery target: for tests of the core that are not about authority. */
export const everyoneIsOwner: AuthorityPort = { roleOf: () => "owner", mayDeliver: () => true };
