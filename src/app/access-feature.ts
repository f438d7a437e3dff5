import { CHANNEL_ENTRIES } from "../../channels/catalog.js";
import { ChannelAccessControl } from "../security/access-control.js";
import { Authority } from "../security/authority.js";
import { pairCommand } from "../security/pair-command.js";
import { PairingStore } from "../security/pairing.js";
import type { MagpieFeature } from "./feature.js";

/** Access control for the chat channels (allowlists, groups, mentions, pairing) and the `/pair` command. */
export const accessFeature: MagpieFeature = {
  name: "access",
  provides: ["access", "authority"],
  setup(config, app) {
    const pairing = new PairingStore(app.store.db, app.clock);
    const authority = new Authority(config, pairing, app.store.db);
    const access = new ChannelAccessControl(config, pairing, authority);
    app.services.authority = authority;
    app.services.pairing = pairing;
    // The attachment_save tool downloads through the adapter a message came from.
    app.services.channels = app.channels;
    const pair = pairCommand({
      pairing,
      access,
      messenger: app.messenger,
      pairable: CHANNEL_ENTRIES.filter((entry) => entry.pairing).map((entry) => entry.name),
    });
    return { access, authority, commands: [pair] };
  },
};
