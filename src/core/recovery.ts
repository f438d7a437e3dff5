import type { Logger } from "pino";
import { atomic } from "../store/atomic.js";
import type { InboxItem } from "../store/inbox.js";
import type { Store } from "../store/index.js";
import { describeDoneSteps } from "../store/step-journal.js";
import type { Clock } from "./clock.js";
import { type EventPublisher, NO_EVENTS } from "./events.js";
import { INTERRUPTED_REPLY } from "./no-llm.js";
import { outageKey } from "./outage-wait.js";
import { settleOutcome } from "./outcomes.js";
import { replyTargetOf } from "./session-key.js";

/** The step journal's id of a chat turn: its first message's (stable across restarts). */
export function chatTurnJournalId(firstInboxId: number): string {
  return `inbox:${firstInboxId}`;
}

/** The "interrupted" notice of a turn that could not resume, naming what it had already done. */
export function interruptedNotice(done: readonly string[]): string {
  return done.length > 0
    ? `${INTERRUPTED_REPLY}\nAlready done before it was cut off: ${done.join("; ")}.`
    : INTERRUPTED_REPLY;
}

/**
 * After a restart (DESIGN.md → Durable turns): messages never started are queued again (a session's are collected
 * into one turn); a turn that was running when the process died is queued again too, and resumes from its step
 * journal — unless its journal is older than `agent.resumeWithinSecs` (`resumeWithinMs`): then it is reported
 * with one "interrupted" notice per session, naming what it had already done.
 */
export function recoverInbox(deps: {
  store: Store;
  logger: Logger;
  clock: Clock;
  events?: EventPublisher;
  /** A cut-off turn whose journal (or start, without one) is at most this old resumes. */
  resumeWithinMs: number;
  /**
   * When this process started: a message marked running since then is a live turn of this process (channels
   * start taking messages before the recovery runs), not one the last process left cut off.
   */
  liveSince?: number;
  enqueue(sessionKey: string, inboxId: number): void;
}): { resumed: number; interrupted: number; notices: number; continued: number } {
  const { store, logger, clock } = deps;
  const unfinished = store.inbox.unfinished();
  const cutOff = new Map<string, InboxItem[]>();
  const live = new Set<number>();
  for (const item of unfinished) {
    if (item.status !== "processing") continue;
    if (deps.liveSince !== undefined && (item.startedAt ?? 0) >= deps.liveSince) {
      live.add(item.id);
      continue;
    }
    const items = cutOff.get(item.sessionKey) ?? [];
    items.push(item);
    cutOff.set(item.sessionKey, items);
  }
  let interrupted = 0;
  let continued = 0;
  let notices = 0;
  const now = clock.now();
  const ended = new Set<number>();
  /** One "interrupted" notice for a turn that can't resume, naming what its journals say was done. */
  const endInterrupted = (items: InboxItem[], journalIds: string[]) => {
    const last = items[items.length - 1]!;
    const { replyToMessageId, ...target } = replyTargetOf(last.message);
    const done = describeDoneSteps(journalIds.flatMap((journalId) => store.journal.steps(journalId)));
    atomic(store.db, () => {
      store.outbox.enqueue(
        last.message.note ? target : { ...target, replyToMessageId },
        { text: interruptedNotice(done), format: "plain" },
        { origin: "notice", inboxId: last.id, at: now },
      );
      store.inbox.setStatus(
        items.map((item) => item.id),
        "interrupted",
        now,
      );
      for (const journalId of journalIds) store.journal.clear(journalId);
      settleOutcome(
        store,
        deps.events ?? NO_EVENTS,
        items.map((item) => item.id),
        "interrupted",
        "resume.expired",
      );
    });
  };
  for (const items of cutOff.values()) {
    const first = items[0]!;
    const journalId = chatTurnJournalId(first.id);
    const startedAt = store.journal.startedAt(journalId) ?? first.startedAt ?? first.receivedAt;
    if (now - startedAt <= deps.resumeWithinMs) {
      // Resumable: queued again like a message never started; its run finds the journal and resumes after it.
      store.inbox.setStatus(
        items.map((item) => item.id),
        "pending",
        now,
      );
      continued += items.length;
      continue;
    }
    endInterrupted(items, [journalId]);
    for (const item of items) ended.add(item.id);
    interrupted += items.length;
    notices++;
  }
  // A turn parked by an outage (or set back to pending by a recovery that died before running it) left its
  // messages pending with their journal: it resumes after a restart only while that journal is young enough, like a
  // cut-off turn. Older, its messages end "interrupted" with one notice per session naming what was done; the
  // session's later messages are answered as usual.
  const stale = new Map<string, InboxItem[]>();
  for (const item of unfinished) {
    if (item.status !== "pending" || live.has(item.id)) continue;
    const startedAt = store.journal.startedAt(chatTurnJournalId(item.id));
    if (startedAt === null || now - startedAt <= deps.resumeWithinMs) continue;
    stale.set(item.sessionKey, [...(stale.get(item.sessionKey) ?? []), item]);
  }
  for (const [sessionKey, items] of stale) {
    endInterrupted(
      items,
      items.map((item) => chatTurnJournalId(item.id)),
    );
    for (const item of items) ended.add(item.id);
    interrupted += items.length;
    notices++;
    // Nothing of the session waits for the model any more: its outage (and the notice it stands for) is over.
    if (!unfinished.some((item) => item.sessionKey === sessionKey && !ended.has(item.id)))
      store.kv.delete(outageKey(sessionKey));
  }
  let resumed = 0;
  // In id order: a resumed turn's messages come before those that waited behind it, and are collected with them.
  for (const item of unfinished) {
    if (ended.has(item.id) || live.has(item.id)) continue;
    deps.enqueue(item.sessionKey, item.id);
    if (item.status === "pending") resumed++;
  }
  if (resumed || interrupted || continued)
    logger.info({ resumed, continued, interrupted, notices }, "inbox-recovered");
  return { resumed, interrupted, notices, continued };
}
