import type { Logger } from "pino";
import { z } from "zod";
import type { ReplyTarget } from "../core/types.js";
import { row } from "../lib/row.js";
import { markSentElsewhere } from "../notify/delivery-failover.js";
import type { AppContext } from "./feature.js";

const ownerChats = row(
  z.object({ channel: z.string(), chat_id: z.string(), user_id: z.string() }),
  "owner-alert",
);

export interface OwnerAlert {
  /** The phone notification's title. */
  title: string;
  text: string;
  /** A chat the DM must not go to (the one that refuses replies). */
  except?: { channel: string; chatId: string };
  /** A channel the DM must not go to at all (the one that is down). */
  exceptChannel?: string;
}

/**
 * How Magpie tells its owner something went wrong outside any conversation (an undeliverable reply, a config file
 * that can't be reloaded): every configured phone provider (Pushover, ntfy) and the owner's first direct chat.
 */
export function ownerAlerter(app: AppContext, logger: Logger): (alert: OwnerAlert) => void {
  /** The owner's first direct chat (the oldest DM from an owner), other than `except`. */
  const ownerDm = (except: OwnerAlert["except"], exceptChannel?: string): ReplyTarget | null => {
    const rows = ownerChats.all(
      app.store.db
        .prepare(
          `SELECT channel, json_extract(payload, '$.chatId') AS chat_id, json_extract(payload, '$.userId') AS user_id
         FROM inbox WHERE json_extract(payload, '$.isDirect') = 1 AND message_id NOT LIKE 'note:%'
         GROUP BY channel, chat_id ORDER BY MIN(id) LIMIT 50`,
        )
        .all(),
    );
    const authority = app.ports.authority();
    const found = rows.find(
      (row) =>
        !(except && row.channel === except.channel && row.chat_id === except.chatId) &&
        row.channel !== exceptChannel &&
        authority.roleOf(row.channel, row.user_id) === "owner",
    );
    return found ? { channel: found.channel, chatId: found.chat_id } : null;
  };

  return ({ title, text, except, exceptChannel }) => {
    const notifier = app.services.notifier;
    const dm = ownerDm(except, exceptChannel);
    const sendDm = (phoneTookIt: boolean) => {
      if (!dm) return;
      const outboxId = app.messenger.send(dm, { text, format: "plain" }, "notice");
      // The owner has the alert on the phone already: if the DM copy is refused, it is not failed over to the
      // phone again (one message per alert, and no alert about an alert).
      if (phoneTookIt) markSentElsewhere(app.store.kv, outboxId, "phone");
    };
    if (!notifier.configured) {
      sendDm(false);
      return;
    }
    // The DM copy is queued once the phone answered, so that its fate is known before the copy can fail.
    notifier
      .send({ title, message: text, priority: 1 })
      .then(
        () => true,
        (error: unknown) => {
          logger.warn({ err: error }, "owner-phone-alert-failed");
          return false;
        },
      )
      .then(sendDm)
      .catch((error: unknown) => logger.warn({ err: error }, "owner-dm-alert-failed"));
  };
}
