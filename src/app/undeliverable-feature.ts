import { z } from "zod";
import { magpieEvents } from "../core/events.js";
import { row } from "../lib/row.js";
import type { MagpieFeature } from "./feature.js";
import { ownerAlerter } from "./owner-alert.js";

const outboxIds = row(z.object({ id: z.number() }), "undeliverable outbox ids");

/** The kv key marking a chat whose replies the platform refuses (one alert per incident, across restarts). */
const incidentKey = (channel: string, chatId: string) => `undeliverable:${channel}:${chatId}`;

/**
 * A reply the platform kept refusing (DESIGN.md → Every message has an outcome, `undeliverable`): the owner is
 * alerted once per chat and incident — every configured phone provider (Pushover, ntfy), and their first DM on another chat — and the
 * incident ends with the next reply delivered there. The reply itself stays readable in `magpie trace`.
 */
export const undeliverableFeature: MagpieFeature = {
  name: "undeliverable",
  setup(_config, app) {
    const { store } = app;
    const logger = app.logger.child({ component: "undeliverable" });
    const onError = (error: unknown) => logger.error({ err: error }, "undeliverable-alert-failed");
    const tellOwner = ownerAlerter(app, logger);
    const failedReplies = store.db.prepare(
      "SELECT id FROM outbox WHERE inbox_id = ? AND status = 'failed' AND origin IN ('reply', 'command') ORDER BY id",
    );
    /** The fallback path that delivered one of this message's refused replies (then that reply was the alert). */
    const failedOverVia = async (inboxId: number): Promise<string | null> => {
      const lookup = app.services.deliveryFailover;
      if (!lookup) return null;
      for (const { id: outboxId } of outboxIds.all(failedReplies.all(inboxId))) {
        const path = await lookup(outboxId);
        if (path) return path;
      }
      return null;
    };
    const alert = async (channel: string, chatId: string, inboxId: number, cause: string) => {
      const key = incidentKey(channel, chatId);
      if (store.kv.has(key)) return;
      // An owner's DM reply that delivery failover delivered reached the owner with its trace id: that was the one
      // message about it (DESIGN.md → Delivery failover); the alert is for what no path delivered.
      const via = await failedOverVia(inboxId);
      if (via) {
        logger.info({ channel, chatId, inboxId, path: via }, "undeliverable-reply-failed-over");
        return;
      }
      if (store.kv.has(key)) return;
      store.kv.set(key, { since: app.clock.now(), inboxId });
      const text = `Magpie can't deliver replies to ${channel} chat ${chatId} (${cause.slice(0, 200)}). Run \`magpie trace ${inboxId}\` to read the reply; this is said once until a reply gets through there again.`;
      logger.warn({ channel, chatId, inboxId, cause }, "chat-undeliverable");
      tellOwner({ title: "Magpie: reply undeliverable", text, except: { channel, chatId } });
    };

    const id = app.events.app;
    const subscriptions = [
      magpieEvents.messageOutcome.subscribe(
        id,
        (event) => {
          if (event.outcome !== "undeliverable") return;
          for (const inboxId of event.inboxIds) {
            const item = store.inbox.get(inboxId);
            if (item)
              void alert(item.message.channel, item.message.chatId, inboxId, event.cause ?? "refused").catch(
                onError,
              );
          }
        },
        onError,
      ),
      magpieEvents.delivery.subscribe(
        id,
        (event) => {
          if (event.status !== "sent") return;
          const key = incidentKey(event.channel, event.chatId);
          if (store.kv.has(key)) store.kv.delete(key);
        },
        onError,
      ),
    ];
    return {
      stop: () => {
        for (const unsubscribe of subscriptions) unsubscribe();
      },
    };
  },
};
