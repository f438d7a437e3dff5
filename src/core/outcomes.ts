import type { Store } from "../store/index.js";
import type { TurnStatus } from "./agent-loop.js";
import type { EventPublisher, MessageOutcome } from "./events.js";

/** Stores how inbox messages ended (DESIGN.md → Every message has an outcome) and publishes it. */
export function settleOutcome(
  store: Store,
  events: EventPublisher,
  inboxIds: number[],
  outcome: MessageOutcome,
  cause?: string,
): void {
  if (inboxIds.length === 0) return;
  store.inbox.setOutcome(inboxIds, outcome, cause);
  events.messageOutcome({ inboxIds, outcome, ...(cause ? { cause } : {}) });
}

/** A finished turn's outcome for its messages: its reply names the cause of anything but `answered`. */
export function outcomeOfTurn(
  status: TurnStatus,
  errorCode?: string,
): { outcome: MessageOutcome; cause?: string } {
  switch (status) {
    case "ok":
      return { outcome: "answered" };
    case "aborted":
      return { outcome: "interrupted", cause: "stopped" };
    case "budget":
      return { outcome: "failed", cause: errorCode ?? "budget.exceeded" };
    case "max_iterations":
      return { outcome: "failed", cause: errorCode ?? "turn.max_iterations" };
    default:
      return { outcome: "failed", cause: errorCode ?? `turn.${status}` };
  }
}
