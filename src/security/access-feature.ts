import type { MagpieFeature } from "../app/feature.js";
import { systemClock } from "../core/clock.js";
import { ChannelAccessControl } from "./access-control.js";
import { pairCommand } from "./pair-command.js";
import { PairingStore } from "./pairing.js";

/** Access control for the chat channels (allowlists, groups, mentions, pairing) and the `/pair` command. */
export const accessFeature: MagpieFeature = {
  name: "access",
  setup(app) {
    const pairing = new PairingStore(app.store.db, systemClock);
    const access = new ChannelAccessControl(app.config, pairing);
    app.setAccessControl(access);
    // Button presses skip the message path; this feature is set up first, so this handler runs before any
    // other and swallows presses from people who may not write in that chat (approval buttons in a group).
    app.addButtonHandler((press) => {
      if (access.allowsPress(press)) return false;
      app.logger.debug({ channel: press.channel, chatId: press.chatId }, "button-press-denied");
      return true;
    });
    app.commands.register(pairCommand({ pairing, access, messenger: app.messenger }));
    app.services.pairing = pairing;
    // The attachment_save tool downloads through the adapter a message came from.
    app.services.channels = app.channels;
  },
};
