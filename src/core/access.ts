import type { ButtonPress, InboundMessage, InboundSender, ScreenVerdict } from "./types.js";

export type AccessDecision =
  | { allow: true }
  /** Denied; `reply` (e.g. a pairing code) is sent back directly and nothing else happens. */
  | { allow: false; reason: string; reply?: string };

/** Decides whether an inbound message may reach the router. Runs before the inbox write. */
export interface AccessControl {
  check(message: InboundMessage): AccessDecision | Promise<AccessDecision>;
  /**
   * Whether a button press counts (approvals, choices): the presser must be allowed to write in that chat.
   * Presses skip `check` (they carry no text and no mention); without this method every press counts.
   */
  allowsPress?(press: ButtonPress): boolean;
  /**
   * What `check` would decide for a message from `sender` that mentions the bot, without issuing anything (no
   * pairing code): adapters ask it before they read a body. Without this method every sender counts as allowed.
   */
  screen?(sender: InboundSender): ScreenVerdict;
}

/** Lets everything through: used for the local console, and in tests. */
export const allowAll: AccessControl = {
  check: () => ({ allow: true }),
  allowsPress: () => true,
  screen: () => "allowed",
};
