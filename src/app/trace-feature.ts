import { magpieEvents } from "../core/events.js";
import { TraceRepository } from "../store/trace.js";
import type { MagpieFeature } from "./feature.js";

/**
 * `magpie trace`'s data (DESIGN.md → CLI): every core event that explains a message — its access verdict, its
 * turns with their LLM and tool calls, its deliveries and outcome — written to `trace_events`, keyed by inbox id,
 * turn id and outbox id, pruned with the inbox. A refused message is kept as metadata only: never its text.
 */
export const traceFeature: MagpieFeature = {
  name: "trace",
  setup(_config, app) {
    const logger = app.logger.child({ component: "trace" });
    const onError = (error: unknown) => logger.error({ err: error }, "trace-write-failed");
    // A turn's start and steps (access, receipt, turn start, LLM and tool calls) are queued and written in one
    // transaction per turn of the event loop; a turn's end, a delivery and an outcome write at once, with whatever
    // is queued (see TraceRepository).
    const trace = new TraceRepository(app.store.db, onError);
    const id = app.events.app;
    const subscriptions = [
      magpieEvents.accessDecided.subscribe(
        id,
        (event) =>
          // A refusal ends the message there: written at once, like an outcome.
          trace[event.verdict === "allowed" ? "record" : "recordNow"]({
            at: event.at,
            kind: "access",
            channel: event.channel,
            chatId: event.chatId,
            messageId: event.messageId,
            data: {
              userId: event.userId,
              verdict: event.verdict,
              ...(event.reason ? { reason: event.reason } : {}),
            },
          }),
        onError,
      ),
      magpieEvents.messageReceived.subscribe(
        id,
        (event) =>
          trace.record({
            at: event.at,
            kind: "received",
            inboxId: event.inboxId,
            channel: event.channel,
            chatId: event.chatId,
            messageId: event.messageId,
            data: { textChars: event.textChars },
          }),
        onError,
      ),
      magpieEvents.turnStarted.subscribe(
        id,
        (event) => {
          const data = { origin: event.origin, agent: event.agent, sessionKey: event.sessionKey };
          // One row per message the turn answers, so each message finds its turn; one for a turn with none.
          const inboxIds = event.inboxIds.length > 0 ? event.inboxIds : [null];
          for (const inboxId of inboxIds)
            trace.record({ at: event.at, kind: "turn_started", inboxId, turnId: event.turnId, data });
        },
        onError,
      ),
      magpieEvents.turnFinished.subscribe(
        id,
        (event) =>
          trace.recordNow({
            at: event.at,
            kind: "turn_finished",
            turnId: event.turnId,
            data: {
              origin: event.origin,
              agent: event.agent,
              status: event.status,
              ...(event.errorCode ? { errorCode: event.errorCode } : {}),
              durationMs: event.durationMs,
              iterations: event.iterations,
              toolCalls: event.toolCalls,
            },
          }),
        onError,
      ),
      magpieEvents.llmCall.subscribe(
        id,
        ({ app: _app, at, turnId, ...data }) => {
          // Calls outside any turn (memory's embeddings) explain no message.
          if (turnId) trace.record({ at, kind: "llm", turnId, data });
        },
        onError,
      ),
      magpieEvents.toolCall.subscribe(
        id,
        ({ app: _app, at, turnId, ...data }) => {
          if (turnId) trace.record({ at, kind: "tool", turnId, data });
        },
        onError,
      ),
      magpieEvents.delivery.subscribe(
        id,
        ({ app: _app, at, outboxId, inboxId, channel, chatId, ...data }) =>
          trace.recordNow({
            at,
            kind: "delivery",
            outboxId,
            inboxId: inboxId ?? null,
            channel,
            chatId,
            data,
          }),
        onError,
      ),
      magpieEvents.messageOutcome.subscribe(
        id,
        (event) => {
          for (const inboxId of event.inboxIds) {
            trace.record({
              at: event.at,
              kind: "outcome",
              inboxId,
              data: { outcome: event.outcome, ...(event.cause ? { cause: event.cause } : {}) },
            });
          }
          // An outcome ends a message: its trace is complete on disk before anyone reads the outcome.
          trace.flush();
        },
        onError,
      ),
    ];
    return {
      stop: () => {
        for (const unsubscribe of subscriptions) unsubscribe();
        trace.flush();
      },
    };
  },
};
