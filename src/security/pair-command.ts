import type { SlashCommand } from "../core/commands.js";
import type { Messenger } from "../core/messenger.js";
import type { ChannelAccessControl } from "./access-control.js";
import type { PairingStore } from "./pairing.js";

const USAGE = "Usage: /pair approve <code> — or /pair list to see pending codes.";

/** `/pair approve <code>` and `/pair list`, for accounts the bot already knows (allowFrom or paired). */
export function pairCommand(deps: {
  pairing: PairingStore;
  access: ChannelAccessControl;
  messenger: Messenger;
  /** The channels whose strangers can get pairing codes (the catalog's `pairing` entries). */
  pairable: readonly string[];
}): SlashCommand {
  return {
    name: "pair",
    description: "Approve a pairing code from a new user",
    usage: "/pair approve <code> | /pair list",
    run({ args, message }) {
      // Open DM or group policies let strangers reach commands: only known accounts may pair others.
      if (!deps.access.isKnownSender(message.channel, message.userId)) {
        return "Only an account listed in allowFrom or already paired can approve pairing codes.";
      }
      const [action, code] = args.split(/\s+/).filter(Boolean);
      // The console is the box's owner: it may approve codes of any channel.
      const channels = message.channel === "console" ? deps.pairable : [message.channel];
      if (action === "list") {
        const pending = channels.flatMap((channel) => deps.pairing.pending(channel));
        if (pending.length === 0) return "No pending pairing codes.";
        return pending
          .map(
            (entry) =>
              `${entry.code} — ${entry.channel} user ${entry.userName ?? entry.userId} (${entry.userId})`,
          )
          .join("\n");
      }
      if (action !== "approve" || !code) return USAGE;
      let expired = false;
      for (const channel of channels) {
        const result = deps.pairing.approve(channel, code, `${message.channel}:${message.userId}`);
        if (result.status === "expired") expired = true;
        if (result.status !== "approved") continue;
        const { pairing } = result;
        deps.messenger.send(
          { channel: pairing.channel, chatId: pairing.chatId },
          { text: "You're paired — I'll answer your messages from now on.", format: "plain" },
          "pairing",
        );
        return `Approved ${pairing.userName ?? pairing.userId} (${pairing.channel} user ${pairing.userId}).`;
      }
      return expired
        ? "That pairing code has expired: ask the sender to message the bot again for a new one."
        : "No pending pairing code matches. Check the code (8 characters) — or run /pair list.";
    },
  };
}
