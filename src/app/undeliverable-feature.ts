import { magpieEvents } from "../core/events.js";
import type { ReplyTarget } from "../core/types.js";
import { createPhoneNotifier } from "../notify/phone.js";
import type { MagpieFeature } from "./feature.js";

/** The kv key marking a chat whose replies the platform refuses (one alert per incident, across restarts). */
const incidentKey = (channel: string, chatId: string) => `undeliverable:${channel}:${chatId}`;

/**
 * A reply the platform kept refusing (DESIGN.md → Every message has an outcome, `undeliverable`): the owner is
 * alerted once per chat and incident — every configured phone provider (Pushover, ntfy), and their first DM on another chat — and the
 * incident ends with the next reply delivered there. The reply itself stays readable in `magpie trace`.
 */
export const undeliverableFeature: MagpieFeature = {
  name: "undeliverable",
  setup(app) {
    const { store, config } = app;
    const logger = app.logger.child({ component: "undeliverable" });
    const onError = (error: unknown) => logger.error({ err: error }, "undeliverable-alert-failed");
    const notifier = app.services.notifier ?? createPhoneNotifier(config.notify);

    /** The owner's first direct chat (the oldest DM from an owner), other than the chat that refuses. */
    const ownerDm = (except: { channel: string; chatId: string }): ReplyTarget | null => {
      const rows = store.db
        .prepare(
          `SELECT channel, json_extract(payload, '$.chatId') AS chat_id, json_extract(payload, '$.userId') AS user_id
           FROM inbox WHERE json_extract(payload, '$.isDirect') = 1 AND message_id NOT LIKE 'note:%'
           GROUP BY channel, chat_id ORDER BY MIN(id) LIMIT 50`,
        )
        .all() as Array<{ channel: string; chat_id: string; user_id: string }>;
      const authority = app.authority();
      const found = rows.find(
        (row) =>
          !(row.channel === except.channel && row.chat_id === except.chatId) &&
          authority.roleOf(row.channel, row.user_id) === "owner",
      );
      return found ? { channel: found.channel, chatId: found.chat_id } : null;
    };

    const alert = (channel: string, chatId: string, inboxId: number, cause: string) => {
      const key = incidentKey(channel, chatId);
      if (store.kv.get(key) !== undefined) return;
      store.kv.set(key, { since: app.clock.now(), inboxId });
      const text = `Magpie can't deliver replies to ${channel} chat ${chatId} (${cause.slice(0, 200)}). Run \`magpie trace ${inboxId}\` to read the reply; this is said once until a reply gets through there again.`;
      logger.warn({ channel, chatId, inboxId, cause }, "chat-undeliverable");
      if (notifier.configured) {
        notifier
          .send({ title: "Magpie: reply undeliverable", message: text, priority: 1 })
          .catch((error: unknown) => logger.warn({ err: error }, "undeliverable-phone-alert-failed"));
      }
      const dm = ownerDm({ channel, chatId });
      if (dm) app.messenger.send(dm, { text, format: "plain" }, "notice");
    };

    const id = app.events.app;
    const subscriptions = [
      magpieEvents.messageOutcome.subscribe(
        id,
        (event) => {
          if (event.outcome !== "undeliverable") return;
          for (const inboxId of event.inboxIds) {
            const item = store.inbox.get(inboxId);
            if (item) alert(item.message.channel, item.message.chatId, inboxId, event.cause ?? "refused");
          }
        },
        onError,
      ),
      magpieEvents.delivery.subscribe(
        id,
        (event) => {
          if (event.status !== "sent") return;
          const key = incidentKey(event.channel, event.chatId);
          if (store.kv.get(key) !== undefined) store.kv.delete(key);
        },
        onError,
      ),
    ];
    app.onStop(() => {
      for (const unsubscribe of subscriptions) unsubscribe();
    });
  },
};
