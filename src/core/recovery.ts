import type { Logger } from "pino";
import type { InboxItem } from "../store/inbox.js";
import type { Store } from "../store/index.js";
import type { Clock } from "./clock.js";
import { type EventPublisher, NO_EVENTS } from "./events.js";
import { INTERRUPTED_REPLY } from "./no-llm.js";
import { settleOutcome } from "./outcomes.js";
import { replyTargetOf } from "./session-key.js";

/**
 * After a restart: messages never started are queued again (a session's are collected into one turn); a turn
 * that was running when the process died is reported with one "interrupted" notice per session, however many
 * messages it held (re-running it could repeat side effects).
 */
export function recoverInbox(deps: {
  store: Store;
  logger: Logger;
  clock: Clock;
  events?: EventPublisher;
  enqueue(sessionKey: string, inboxId: number): void;
}): { resumed: number; interrupted: number; notices: number } {
  const { store, logger, clock } = deps;
  let resumed = 0;
  let interrupted = 0;
  const cutOff = new Map<string, InboxItem[]>();
  for (const item of store.inbox.unfinished()) {
    if (item.status === "pending") {
      deps.enqueue(item.sessionKey, item.id);
      resumed++;
      continue;
    }
    const items = cutOff.get(item.sessionKey) ?? [];
    items.push(item);
    cutOff.set(item.sessionKey, items);
  }
  for (const items of cutOff.values()) {
    const last = items[items.length - 1]!;
    const { replyToMessageId, ...target } = replyTargetOf(last.message);
    store.db.transaction(() => {
      store.outbox.enqueue(
        last.message.note ? target : { ...target, replyToMessageId },
        { text: INTERRUPTED_REPLY, format: "plain" },
        { origin: "notice", inboxId: last.id, at: clock.now() },
      );
      store.inbox.setStatus(
        items.map((item) => item.id),
        "interrupted",
        clock.now(),
      );
      settleOutcome(
        store,
        deps.events ?? NO_EVENTS,
        items.map((item) => item.id),
        "interrupted",
        "restart",
      );
    })();
    interrupted += items.length;
  }
  if (resumed || interrupted) logger.info({ resumed, interrupted, notices: cutOff.size }, "inbox-recovered");
  return { resumed, interrupted, notices: cutOff.size };
}
