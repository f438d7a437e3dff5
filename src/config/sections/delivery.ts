import { z } from "zod";
import { channelEntry } from "../../../channels/catalog.js";
import { positiveInt } from "./common.js";

/**
 * One fallback path: `ntfy`, `pushover`, `email:<address>` or `<channel>:<chatId>` (`matrix:!room:server`).
 * Checked by hand in one pass (no regex): the prefix up to the first ":" names the channel, the rest is the chat.
 */
export function parseFallbackEntry(
  entry: string,
): { kind: "ntfy" | "pushover" } | { kind: "chat"; channel: string; chatId: string } | { error: string } {
  if (entry === "ntfy" || entry === "pushover") return { kind: entry };
  const colon = entry.indexOf(":");
  if (colon <= 0 || colon === entry.length - 1) {
    return {
      error: `"${entry.slice(0, 80)}" is not a fallback path — use ntfy, pushover, "email:<address>" or "<channel>:<chatId>" (e.g. "matrix:!room:server").`,
    };
  }
  const channel = entry.slice(0, colon);
  const chatId = entry.slice(colon + 1);
  if (!/^[a-z][a-z0-9_-]*$/.test(channel)) {
    return {
      error: `"${channel.slice(0, 40)}" is not a channel name — write "<channel>:<chatId>" with a lower-case channel such as telegram or matrix.`,
    };
  }
  if (chatId.length === 0 || /\s/.test(chatId)) {
    return {
      error: `"${chatId.slice(0, 80)}" is not a chat id — write "<channel>:<chatId>" without spaces.`,
    };
  }
  // The channel's own rule for its chat ids (the e-mail channel's is an address), from the catalog.
  const problem = channelEntry(channel)?.chatIdProblem?.(chatId);
  if (problem) return { error: problem };
  return { kind: "chat", channel, chatId };
}

/** `delivery` (DESIGN.md → Message flow → Delivery failover). */
export const deliverySchema = z
  .strictObject({
    /** Tried in order when an owner's report, alert or DM reply becomes undeliverable. Empty: no failover. */
    fallback: z
      .array(
        z.string().superRefine((entry, ctx) => {
          const parsed = parseFallbackEntry(entry);
          if ("error" in parsed) ctx.addIssue({ code: "custom", message: parsed.error });
        }),
      )
      .default([]),
    /** A delivery still failing this long after it was queued is undeliverable and fails over. */
    failoverAfterSecs: positiveInt.default(600),
  })
  .prefault({});
