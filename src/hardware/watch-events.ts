import type { Logger } from "pino";
import { z } from "zod";
import type { SessionNote } from "../core/chat-turns.js";
import type { ReplyTarget } from "../core/types.js";
import { RateGate } from "../lib/rate-gate.js";
import type { KvRepository } from "../store/kv.js";
import type { PinEdge } from "./gpio-service.js";

const EVENTS_KEY = "hardware.events";
const EVENTS_KEPT = 100;
/** Edges of one pin a minute that sessions' own watches (`gpio watch`) are told of; more are counted, not sent. */
const SESSION_EDGES_PER_MINUTE = 6;

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
  /** Where it went: chat, pushover, turn, session <key> — or "suppressed" when over the rate limit. */
  delivered: string[];
}

/** Where a session's own `gpio watch` sends edges: a note into that session. */
export interface SessionWatch {
  sessionKey: string;
  target: ReplyTarget;
  sender: SessionNote["sender"];
}

/**
 * How an edge reads in a chat, on the phone and to the agent (`hardware.watch` and sessions' `gpio watch`), with
 * the events of the pin the rate limit kept back since the last one that went out.
 */
export function edgeText(edge: Pick<PinEdge, "pin" | "edge" | "value" | "at">, dropped: number): string {
  const kept =
    dropped > 0 ? ` — ${dropped} more event(s) in the last minute were not delivered (rate limit)` : "";
  return `⚡ ${edge.pin}: ${edge.edge} (now ${edge.value}) at ${edge.at.toISOString()}${kept}`;
}

export interface WatchEventsOptions {
  notes: (note: SessionNote) => void;
  kv: KvRepository;
  logger: Logger;
}

/**
 * The pin event log (kv `hardware.events`, shown by `gpio list`) and sessions' own watches (`gpio watch`): an edge
 * of a pin a session watches becomes a note into that session, at most 6 a minute per pin. `hardware.watch` is not
 * here: its entries run as gpio triggers (src/triggers/watch-triggers.ts), which `record` what they did.
 */
export class WatchEvents {
  private readonly gates = new Map<string, RateGate>();
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

  /** Handles one debounced edge for the sessions watching its pin. */
  handle(edge: PinEdge): void {
    const sessions = this.sessionWatches.get(edge.pin) ?? [];
    if (sessions.length === 0) return;
    let gate = this.gates.get(edge.pin);
    if (!gate) {
      gate = new RateGate(0, SESSION_EDGES_PER_MINUTE, 60_000);
      this.gates.set(edge.pin, gate);
    }
    if (!gate.take(edge.at.getTime())) {
      this.suppressed.set(edge.pin, (this.suppressed.get(edge.pin) ?? 0) + 1);
      this.record(edge, ["suppressed"]);
      return;
    }
    const text = edgeText(edge, this.suppressed.get(edge.pin) ?? 0);
    this.suppressed.delete(edge.pin);
    for (const session of sessions) {
      this.options.notes({
        target: session.target,
        sender: session.sender,
        origin: "event",
        label: `hardware ${edge.pin}`,
        text: `${text}\n\n(You asked to watch this pin with the gpio tool; say so briefly if it matters, or call gpio unwatch.)`,
        show: text,
      });
    }
    this.record(
      edge,
      sessions.map((session) => `session ${session.sessionKey}`),
    );
  }

  /** Adds one event to the log (a watch trigger's report, or a session watch's). */
  record(edge: Pick<PinEdge, "pin" | "edge" | "value" | "at">, delivered: string[]): void {
    const event: HardwareEvent = {
      pin: edge.pin,
      edge: edge.edge,
      value: edge.value,
      at: edge.at.toISOString(),
      delivered,
    };
    if (delivered[0] === "suppressed")
      this.options.logger.warn({ pin: edge.pin }, "hardware-event-suppressed");
    else this.options.logger.info({ pin: edge.pin, edge: edge.edge, delivered }, "hardware-event");
    this.options.kv.set(EVENTS_KEY, [...this.events(), event].slice(-EVENTS_KEPT));
  }
}
