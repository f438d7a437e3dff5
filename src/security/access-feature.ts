import type { MagpieFeature } from "../app/feature.js";
import { systemClock } from "../core/clock.js";
import { ChannelAccessControl } from "./access-control.js";
import { Authority } from "./authority.js";
import { pairCommand } from "./pair-command.js";
import { PairingStore } from "./pairing.js";

/** Access control for the chat channels (allowlists, groups, mentions, pairing) and the `/pair` command. */
export const accessFeature: MagpieFeature = {
  name: "access",
  setup(app) {
    const pairing = new PairingStore(app.store.db, systemClock);
    const authority = new Authority(app.config, pairing, app.store.db);
    const access = new ChannelAccessControl(app.config, pairing, authority);
    app.setAccessControl(access);
    app.setAuthority(authority);
    app.services.authority = authority;
    app.commands.register(pairCommand({ pairing, access, messenger: app.messenger }));
    app.services.pairing = pairing;
    // The attachment_save tool downloads through the adapter a message came from.
    app.services.channels = app.channels;
  },
};
