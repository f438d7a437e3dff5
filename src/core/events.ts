import diagnostics_channel from "node:diagnostics_channel";
import type { LlmCallFields } from "../llm/llm-call.js";
import type { MessageOutcome } from "../store/message-records.js";
import type { TurnOrigin } from "./identity.js";

/**
 * What happens inside Magpie, published on `node:diagnostics_channel` (STYLE.md → Observe through events): the
 * core publishes, features (trace, metrics, the dashboard, alerts) subscribe. Publishing costs nothing while
 * nobody listens. Channel names are global (`magpie:<event>`, as undici's are `undici:<event>`), so every event
 * carries the `app` that published it: two apps in one process (tests) never see each other's events.
 */

/** Fields every event has. */
export interface EventBase {
  /** The publishing app's instance id (`AppEvents.app`). */
  app: string;
  /** Milliseconds since the epoch (the app's clock). */
  at: number;
}

/** An inbound message the bot took: written to the inbox. */
export interface MessageReceivedEvent extends EventBase {
  inboxId: number;
  channel: string;
  chatId: string;
  messageId: string;
  sessionKey: string;
  userId: string;
  textChars: number;
}

/** Access control's verdict on an inbound message (before the inbox: a refused one never gets an inbox id). */
export interface AccessDecidedEvent extends EventBase {
  channel: string;
  chatId: string;
  messageId: string;
  userId: string;
  verdict: "allowed" | "refused" | "pairing";
  /** Why, for refusals: `dm.disabled`, `group.not_allowed`, … */
  reason?: string;
}

/** A turn began running (it holds a slot). */
export interface TurnStartedEvent extends EventBase {
  turnId: string;
  origin: TurnOrigin;
  sessionKey: string;
  agent: string;
  /** The inbox messages this turn answers (empty for a job run or subagent). */
  inboxIds: number[];
}

/** A turn ended, however it ended. */
export interface TurnFinishedEvent extends EventBase {
  turnId: string;
  origin: TurnOrigin;
  sessionKey: string;
  agent: string;
  inboxIds: number[];
  /** ok | error | budget | loop | max_iterations | aborted … (the agent loop's status). */
  status: string;
  errorCode?: string;
  durationMs: number;
  iterations: number;
  toolCalls: number;
}

/** One LLM request (chat, embedding, transcription, speech), answered or failed: published by the LLM provider. */
export interface LlmCallEvent extends EventBase, LlmCallFields {}

/** One tool call through the tool runtime (refusals included). */
export interface ToolCallEvent extends EventBase {
  turnId?: string;
  sessionKey: string;
  tool: string;
  /** allowed | refused | approved | denied | … (the audit's verdict). */
  verdict: string;
  ok: boolean;
  errorCode?: string;
  /** The turn held untrusted content when the call ran: "after reading https://…, mail from x@y". */
  untrusted?: string;
  durationMs: number;
}

/** An outbox item's delivery attempt. */
export interface DeliveryEvent extends EventBase {
  outboxId: number;
  inboxId?: number;
  channel: string;
  chatId: string;
  status: "sent" | "retry" | "failed";
  attempts: number;
  platformMessageIds: string[];
  error?: string;
}

/** The outcome stored with an inbound message (DESIGN.md → Every message has an outcome); the store keeps it. */
export type { MessageOutcome } from "../store/message-records.js";

export interface MessageOutcomeEvent extends EventBase {
  inboxIds: number[];
  outcome: MessageOutcome;
  /** A short cause for failed / undeliverable / refused. */
  cause?: string;
}

/** A due cron slot and what became of it. */
export interface CronRunEvent extends EventBase {
  jobId: string;
  name: string;
  status: "ran" | "failed" | "missed" | "skipped";
  /** How late the run started after its due time. */
  lagSeconds: number;
  durationMs: number;
}

/** An event reaching a trigger and what became of it. */
export interface TriggerEventEvent extends EventBase {
  trigger: string;
  result: "fired" | "filtered" | "error" | "dropped";
}

/** One typed channel. */
export interface EventChannel<T extends EventBase> {
  readonly name: string;
  /** Publishes to the subscribers (nothing happens while there are none). */
  publish(event: T): void;
  /**
   * Calls `listener` for this app's events; returns the unsubscribe function. A listener that throws is
   * logged by `onError` and never reaches the publisher.
   */
  subscribe(app: string, listener: (event: T) => void, onError?: (error: unknown) => void): () => void;
}

function eventChannel<T extends EventBase>(name: string): EventChannel<T> {
  const channel = diagnostics_channel.channel(name);
  return {
    name,
    publish(event) {
      if (channel.hasSubscribers) channel.publish(event);
    },
    subscribe(app, listener, onError) {
      // diagnostics_channel rethrows a subscriber's error on the next tick (an uncaught exception): caught here.
      const handler = (message: unknown) => {
        const event = message as T;
        if (event.app !== app) return;
        try {
          listener(event);
        } catch (error) {
          onError?.(error);
        }
      };
      channel.subscribe(handler);
      return () => void channel.unsubscribe(handler);
    },
  };
}

/** Every channel Magpie publishes on. */
export const magpieEvents = {
  messageReceived: eventChannel<MessageReceivedEvent>("magpie:message-received"),
  accessDecided: eventChannel<AccessDecidedEvent>("magpie:access-decided"),
  turnStarted: eventChannel<TurnStartedEvent>("magpie:turn-started"),
  turnFinished: eventChannel<TurnFinishedEvent>("magpie:turn-finished"),
  llmCall: eventChannel<LlmCallEvent>("magpie:llm-call"),
  toolCall: eventChannel<ToolCallEvent>("magpie:tool-call"),
  delivery: eventChannel<DeliveryEvent>("magpie:delivery"),
  messageOutcome: eventChannel<MessageOutcomeEvent>("magpie:message-outcome"),
  cronRun: eventChannel<CronRunEvent>("magpie:cron-run"),
  triggerEvent: eventChannel<TriggerEventEvent>("magpie:trigger-event"),
} as const;

export type MagpieEvents = typeof magpieEvents;

type EventOf<C> = C extends EventChannel<infer T> ? T : never;

/** What a publisher is given: the event without `app` (filled in) and with `at` optional (the clock's now). */
export type EventInput<T extends EventBase> = Omit<T, "app" | "at"> & { at?: number };

/** Publishes one app's events: `app` and `at` are filled in. Handed to the core's classes through their options. */
export type EventPublisher = {
  readonly app: string;
} & {
  readonly [K in keyof MagpieEvents]: (event: EventInput<EventOf<MagpieEvents[K]>>) => void;
};

/** The publisher for one app instance (`app`: a random id per MagpieApp). */
export function eventPublisher(app: string, now: () => number = Date.now): EventPublisher {
  const publisher: Record<string, unknown> = { app };
  for (const [key, channel] of Object.entries(magpieEvents)) {
    const typed = channel as EventChannel<EventBase>;
    publisher[key] = (event: EventInput<EventBase>) =>
      typed.publish({ ...event, app, at: event.at ?? now() });
  }
  return publisher as EventPublisher;
}

/** A publisher that publishes nothing: the default of the core's classes when nobody set one up (unit tests). */
export const NO_EVENTS: EventPublisher = eventPublisher("none");
