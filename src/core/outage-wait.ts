import { z } from "zod";
import { atomic } from "../store/atomic.js";
import type { InboxItem } from "../store/inbox.js";
import type { Store } from "../store/index.js";
import type { Clock } from "./clock.js";
import type { ReplyTarget } from "./types.js";

/**
 * A chat's outage as stored (kv `outage:<sessionKey>`), so a restart keeps its start (the limit), its back-off and
 * the fact that the chat was told — one notice per chat per outage.
 */
const outageSchema = z.object({
  /** When the chat's turn first failed for an outage. */
  since: z.number(),
  /** Failed attempts so far (the back-off grows with them). */
  attempts: z.number().int().min(0),
  /** When the parked turn is tried again. */
  retryAt: z.number(),
});
export type ChatOutage = z.infer<typeof outageSchema>;

export type OutageDecision =
  | { kind: "wait"; retryAt: number }
  | { kind: "give-up"; waitedMs: number; attempts: number };

export interface OutageWaitsOptions {
  store: Store;
  clock: Clock;
  /** `agent.retryOutageForSecs`, read at each use (0 = off: an outage fails the turn at once). */
  limitSecs: () => number;
  random?: () => number;
}

const FIRST_DELAY_MS = 2_000;
const MAX_DELAY_MS = 30_000;

/**
 * DESIGN.md → Message flow → Waiting out an outage. A chat turn whose every model failed for a reason that passes
 * (connection, timeout, 429, 5xx) is parked instead of failed: its messages go back to `pending` (a restart runs
 * them again), the chat gets one notice, and the turn is retried with back-off until `agent.retryOutageForSecs`.
 * The session's lane stays busy while it waits, so later messages of the chat queue behind it, in order. An
 * answer in any chat ends the wait of every parked one: the model is back. A turn whose tools already ran keeps its
 * step journal while parked (in the database, so a restart keeps it too): each try resumes after the journaled
 * calls, as after a crash (DESIGN.md → Durable turns), and never runs them again.
 */
export class OutageWaits {
  /** Sessions waiting now → wakes the wait early. */
  private readonly waiting = new Map<string, () => void>();
  private readonly random: () => number;

  constructor(private readonly options: OutageWaitsOptions) {
    this.random = options.random ?? Math.random;
  }

  get enabled(): boolean {
    return this.options.limitSecs() > 0;
  }

  /** Whether a session's turn is parked now, waiting for the model. */
  isParked(sessionKey: string): boolean {
    return this.waiting.has(sessionKey);
  }

  /** The stored outage of a chat (undefined when its last turn did not end in one). */
  outageOf(sessionKey: string): ChatOutage | undefined {
    return this.options.store.kv.get(keyOf(sessionKey), outageSchema);
  }

  /**
   * After an attempt failed for an outage: park the turn (its messages back to `pending`, the notice for a chat not
   * yet told, the state — in one transaction) and say when to try again, or give up past the limit.
   */
  park(
    sessionKey: string,
    items: InboxItem[],
    target: ReplyTarget,
    errorCode: string,
  ): { decision: OutageDecision; noticed: boolean } {
    const { store, clock } = this.options;
    const now = clock.now();
    const known = this.outageOf(sessionKey);
    const outage = known ?? { since: now, attempts: 0, retryAt: now };
    const limitMs = this.options.limitSecs() * 1000;
    const attempts = outage.attempts + 1;
    if (now - outage.since >= limitMs) {
      store.kv.delete(keyOf(sessionKey));
      return { decision: { kind: "give-up", waitedMs: now - outage.since, attempts }, noticed: false };
    }
    const retryAt = Math.min(now + this.delayMs(attempts), outage.since + limitMs);
    const ids = items.map((item) => item.id);
    atomic(store.db, () => {
      store.inbox.setStatus(ids, "pending", now);
      store.kv.set(keyOf(sessionKey), { since: outage.since, attempts, retryAt } satisfies ChatOutage);
      if (!known) {
        store.outbox.enqueue(
          target,
          { text: outageNotice(errorCode, this.options.limitSecs()), format: "plain" },
          { origin: "notice", inboxId: ids[ids.length - 1], at: now },
        );
      }
    });
    return { decision: { kind: "wait", retryAt }, noticed: !known };
  }

  /**
   * The chat's turn ended otherwise than parked (answered, failed, stopped): its outage is over. An answer also
   * wakes every other parked chat — the model is back.
   */
  settled(sessionKey: string, answered: boolean): ChatOutage | undefined {
    const outage = this.outageOf(sessionKey);
    if (outage) this.options.store.kv.delete(keyOf(sessionKey));
    if (answered) for (const wake of [...this.waiting.values()]) wake();
    return outage;
  }

  /**
   * Waits until `until`, an answer elsewhere (then resolves), or an abort (then rejects with the reason: /stop,
   * shutdown).
   */
  wait(sessionKey: string, until: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.waiting.delete(sessionKey);
      };
      const onAbort = () => {
        done();
        reject(signal.reason);
      };
      const timer = setTimeout(
        () => {
          done();
          resolve();
        },
        Math.max(0, until - this.options.clock.now()),
      );
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.set(sessionKey, () => {
        done();
        resolve();
      });
    });
  }

  /**
   * Back-off before try `attempt` + 1: 2 s doubling, at most 30 s — and at most a 60th of the limit (no less than
   * 2 s), so a short limit is still tried often — minus up to 20 % jitter, so parked chats don't retry in step.
   */
  private delayMs(attempt: number): number {
    const cap = Math.max(FIRST_DELAY_MS, Math.min(MAX_DELAY_MS, (this.options.limitSecs() * 1000) / 60));
    const delay = Math.min(cap, FIRST_DELAY_MS * 2 ** (attempt - 1));
    return Math.round(delay * (1 - this.random() * 0.2));
  }
}

/** The kv key of a chat's stored outage (start-up recovery drops the outage of a chat whose parked turn ended). */
export const outageKey = (sessionKey: string): string => keyOf(sessionKey);

function keyOf(sessionKey: string): string {
  return `outage:${sessionKey}`;
}

/** Why the model is unreachable, in a few words, by the turn's error code. */
function reasonOf(errorCode: string): string {
  switch (errorCode) {
    case "llm.timeout":
      return "it does not answer in time";
    case "llm.rate_limited":
      return "the provider is rate-limiting (429)";
    case "llm.server_error":
      return "the provider has a server error";
    case "llm.unreachable":
      return "no connection";
    default:
      return "every configured model is failing";
  }
}

/** The one notice a chat gets when its turn is parked (DESIGN.md's wording first). */
export function outageNotice(errorCode: string, limitSecs: number): string {
  return `The model is unreachable — I'll answer when it's back (${reasonOf(errorCode)}; I keep trying for up to ${duration(limitSecs * 1000)}, /stop drops the message).`;
}

/**
 * The second notice: the turn waited past the limit and ends failed. `done` names the tool calls the turn had already
 * run before the model went away (describeDoneSteps), so the user knows what not to ask for twice.
 */
export function outageGiveUp(
  waitedMs: number,
  attempts: number,
  failure: string,
  done: readonly string[] = [],
): string {
  const already = done.length > 0 ? `\nAlready done before the model went away: ${done.join("; ")}.` : "";
  return `The model is still unreachable after ${duration(waitedMs)} and ${attempts} tries (agent.retryOutageForSecs), so I gave up on your message. Please send it again later.${already}\n${failure}`;
}

export function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} s`;
  return `${Math.round(seconds / 60)} min`;
}
