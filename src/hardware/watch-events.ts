import type { Logger } from "pino";
import { z } from "zod";
import type { WatchConfig } from "../config/sections/hardware.js";
import type { SessionNote } from "../core/chat-turns.js";
import type { ReplyTarget } from "../core/types.js";
import type { KvRepository } from "../store/kv.js";
import type { PinEdge } from "./gpio-service.js";

const EVENTS_KEY = "hardware.events";
const EVENTS_KEPT = 100;
const WINDOW_MS = 60_000;

/** A recorded hardware event (kv `hardware.events`, newest last). */
const hardwareEventSchema = z.object({
  pin: z.string(),
  edge: z.enum(["rising", "falling"]),
  value: z.union([z.literal(0), z.literal(1)]),
  at: z.string(),
  delivered: z.array(z.string()),
});

export interface HardwareEvent {
  pin: string;
  edge: "rising" | "falling";
  value: 0 | 1;
  at: string;
  /** Where it went: chat, pushover, turn — or "suppressed" when over the rate limit. */
  delivered: string[];
}

/** Where a session's own `gpio watch` sends edges: a note into that session. */
export interface SessionWatch {
  sessionKey: string;
  target: ReplyTarget;
  sender: SessionNote["sender"];
}

/**
 * The one action runner's delivery (src/scheduler/action-runner.ts → `ActionRunner.deliver`), as a port: the
 * watch names itself as an event source (`hardware:<pin>`) and the runner posts to the chat or the phone.
 */
export interface WatchDelivery {
  deliver(
    from: { kind: string; id: string; label: string; origin: "event" },
    to: { chat?: ReplyTarget; pushover?: boolean; recheck?: boolean },
    text: string,
  ): Promise<void>;
}

export interface WatchEventsOptions {
  watches: readonly WatchConfig[];
  /** Delivery through the action runner (chat and phone). */
  runner: WatchDelivery;
  /** Whether Pushover is configured (config validation lets `pushover: true` through only with a warning). */
  pushoverConfigured: boolean;
  notes: (note: SessionNote) => void;
  kv: KvRepository;
  logger: Logger;
  now: () => Date;
}

/**
 * Turns debounced pin edges into what `hardware.watch` (and sessions' `gpio watch`) ask for: a chat message,
 * a Pushover notification, an agent turn through a session note. Every event is recorded; more than
 * `maxPerMinute` per pin are counted, not delivered, and the next delivered one says how many were dropped.
 */
export class WatchEvents {
  private readonly recent = new Map<string, number[]>();
  private readonly suppressed = new Map<string, number>();
  readonly sessionWatches = new Map<string, SessionWatch[]>();

  constructor(private readonly options: WatchEventsOptions) {}

  /** Adds a session's watch of `pin` (idempotent). */
  watchFor(pin: string, watch: SessionWatch): void {
    const current = (this.sessionWatches.get(pin) ?? []).filter(
      (entry) => entry.sessionKey !== watch.sessionKey,
    );
    this.sessionWatches.set(pin, [...current, watch]);
  }

  /** Removes a session's watch; true when there was one. */
  unwatchFor(pin: string, sessionKey: string): boolean {
    const current = this.sessionWatches.get(pin) ?? [];
    const kept = current.filter((entry) => entry.sessionKey !== sessionKey);
    this.sessionWatches.set(pin, kept);
    return kept.length !== current.length;
  }

  /** The recorded events, newest last. */
  events(): HardwareEvent[] {
    return this.options.kv.get(EVENTS_KEY, z.array(hardwareEventSchema)) ?? [];
  }

  /** Handles one debounced edge. */
  handle(edge: PinEdge): void {
    const watches = this.options.watches.filter((watch) => watch.pin === edge.pin);
    const sessions = this.sessionWatches.get(edge.pin) ?? [];
    if (watches.length === 0 && sessions.length === 0) return;
    const limit = Math.min(
      ...watches.map((watch) => watch.maxPerMinute),
      sessions.length > 0 ? 6 : Number.POSITIVE_INFINITY,
    );
    const at = edge.at.getTime();
    const times = (this.recent.get(edge.pin) ?? []).filter((time) => at - time < WINDOW_MS);
    if (times.length >= limit) {
      this.suppressed.set(edge.pin, (this.suppressed.get(edge.pin) ?? 0) + 1);
      this.recent.set(edge.pin, times);
      this.record(edge, ["suppressed"]);
      this.options.logger.warn({ pin: edge.pin, limit }, "hardware-event-suppressed");
      return;
    }
    this.recent.set(edge.pin, [...times, at]);
    const dropped = this.suppressed.get(edge.pin) ?? 0;
    this.suppressed.delete(edge.pin);
    const text = `⚡ ${edge.pin}: ${edge.edge} (now ${edge.value}) at ${edge.at.toISOString()}${dropped > 0 ? ` — ${dropped} more event(s) in the last minute were not delivered (rate limit)` : ""}`;
    const delivered: string[] = [];
    const from = {
      kind: "hardware",
      id: edge.pin,
      label: `hardware.watch of ${edge.pin}`,
      origin: "event",
    } as const;
    const failed = (what: string) => (error: unknown) =>
      this.options.logger.warn({ err: error, pin: edge.pin }, `hardware-event-${what}-failed`);
    for (const watch of watches) {
      const { channel, chat_id: chatId, pushover } = watch.notify;
      if (channel !== undefined && chatId !== undefined) {
        const target = { channel, chatId: String(chatId) };
        if (watch.prompt) {
          this.options.notes({
            target,
            sender: { channel, userId: String(chatId), role: "owner" },
            origin: "event",
            label: `hardware ${edge.pin}`,
            text: `${text}\n\n${watch.prompt}`,
            show: text,
          });
          delivered.push("turn");
        } else {
          // The chat is handed over synchronously (the runner's delivery awaits nothing before it).
          this.options.runner.deliver(from, { chat: target, recheck: false }, text).catch(failed("chat"));
          delivered.push("chat");
        }
      }
      if (pushover) {
        if (this.options.pushoverConfigured) {
          delivered.push("pushover");
          this.options.runner.deliver(from, { pushover: true }, text).catch(failed("pushover"));
        } else this.options.logger.warn({ pin: edge.pin }, "hardware-event-pushover-not-configured");
      }
    }
    for (const session of sessions) {
      this.options.notes({
        target: session.target,
        sender: session.sender,
        origin: "event",
        label: `hardware ${edge.pin}`,
        text: `${text}\n\n(You asked to watch this pin with the gpio tool; say so briefly if it matters, or call gpio unwatch.)`,
        show: text,
      });
      delivered.push(`session ${session.sessionKey}`);
    }
    this.record(edge, delivered);
    this.options.logger.info({ pin: edge.pin, edge: edge.edge, delivered }, "hardware-event");
  }

  private record(edge: PinEdge, delivered: string[]): void {
    const event: HardwareEvent = {
      pin: edge.pin,
      edge: edge.edge,
      value: edge.value,
      at: edge.at.toISOString(),
      delivered,
    };
    this.options.kv.set(EVENTS_KEY, [...this.events(), event].slice(-EVENTS_KEPT));
  }
}
