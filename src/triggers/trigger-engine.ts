import type { Logger } from "pino";
import type { EventPublisher } from "../core/events.js";
import { errorMessage } from "../lib/errors.js";
import { RateGate } from "../lib/rate-gate.js";
import { compilePredicate, type Predicate } from "./predicate.js";
import {
  actionKind,
  type TriggerCounts,
  type TriggerDefinition,
  type TriggerEvent,
  type TriggerResult,
} from "./trigger.js";

/** What the engine tells an action besides the event: events of its trigger dropped since it last fired. */
export interface FiringContext {
  dropped: number;
}

/** Runs a fired trigger's action (message, command, prompt or watch report) and delivers what it produced. */
export type ActionRunner = (
  trigger: TriggerDefinition,
  event: TriggerEvent,
  context: FiringContext,
) => Promise<void>;

/** Told of every judged event with its result (the pin event log of `hardware.watch` listens here). */
export type JudgedListener = (trigger: TriggerDefinition, event: TriggerEvent, result: TriggerResult) => void;

/**
 * Commands and agent turns of one trigger running at once; past this an event is dropped rather than queued. A
 * message is handed to the outbox at once, so a burst of them never piles up here.
 */
const MAX_IN_FLIGHT = 4;

interface Entry {
  definition: TriggerDefinition;
  predicate: Predicate | null;
  gate: RateGate;
  counts: TriggerCounts;
  /** Dropped since the last firing (the next firing is told). */
  droppedSinceFired: number;
  inFlight: number;
}

export interface TriggerEngineDeps {
  run: ActionRunner;
  logger: Logger;
  now: () => number;
  events?: EventPublisher;
  judged?: JudgedListener;
}

/**
 * The gate before the LLM (DESIGN.md → Triggers): each event meets its trigger's predicate, then its cooldown
 * and hourly cap, and only then its action. Everything is counted (fired, filtered out, errors, dropped) and
 * published as `triggerEvent`; nothing waits in a queue.
 */
export class TriggerEngine {
  private readonly entries = new Map<string, Entry>();
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly deps: TriggerEngineDeps) {}

  /** Adds or replaces a trigger (its `when` compiled now: a bad one throws). Counts survive a replacement. */
  put(definition: TriggerDefinition): void {
    const predicate = definition.when ? compilePredicate(definition.when) : null;
    const previous = this.entries.get(definition.name);
    this.entries.set(definition.name, {
      definition,
      predicate,
      gate:
        definition.maxPerMinute !== undefined
          ? new RateGate(definition.cooldownSecs * 1000, definition.maxPerMinute, 60_000)
          : new RateGate(definition.cooldownSecs * 1000, definition.maxPerHour),
      counts: previous?.counts ?? { fired: 0, filtered: 0, errors: 0, dropped: 0 },
      droppedSinceFired: 0,
      inFlight: 0,
    });
  }

  remove(name: string): boolean {
    return this.entries.delete(name);
  }

  get(name: string): TriggerDefinition | undefined {
    return this.entries.get(name)?.definition;
  }

  /** Every trigger with its counts, by name. */
  list(): { definition: TriggerDefinition; counts: TriggerCounts }[] {
    return [...this.entries.values()]
      .map(({ definition, counts }) => ({ definition, counts: { ...counts } }))
      .sort((a, b) => a.definition.name.localeCompare(b.definition.name));
  }

  /**
   * Judges one event for trigger `name` and starts its action when it passes. Returns at once with the
   * result; the action runs in the background (`idle()` waits for it).
   */
  handle(name: string, event: TriggerEvent): TriggerResult {
    const entry = this.entries.get(name);
    if (!entry) return "dropped";
    if (!entry.definition.enabled) return "dropped";
    const result = this.judge(entry, event);
    entry.counts[result === "error" ? "errors" : result]++;
    this.deps.events?.triggerEvent({ trigger: name, result });
    this.deps.judged?.(entry.definition, event, result);
    if (result === "dropped") entry.droppedSinceFired++;
    if (result !== "fired") return result;
    const context: FiringContext = { dropped: entry.droppedSinceFired };
    entry.droppedSinceFired = 0;
    entry.inFlight++;
    const action = this.deps
      .run(entry.definition, event, context)
      .catch((error: unknown) => {
        entry.counts.errors++;
        this.deps.logger.error({ trigger: name, err: error }, "trigger-action-failed");
      })
      .finally(() => {
        entry.inFlight--;
        this.running.delete(action);
      });
    this.running.add(action);
    return result;
  }

  /** Resolves when every running action has finished. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private judge(entry: Entry, event: TriggerEvent): TriggerResult {
    const name = entry.definition.name;
    if (entry.predicate) {
      try {
        if (!entry.predicate(event)) return "filtered";
      } catch (error) {
        // An error means "no": a missing field or a wrong type never fires the trigger.
        this.deps.logger.debug({ trigger: name, error: errorMessage(error) }, "trigger-predicate-error");
        return "error";
      }
    }
    const kind = actionKind(entry.definition.do);
    // A message or a watch report is handed over at once; commands and turns take their time.
    const busy = kind !== "message" && kind !== "watch" && entry.inFlight >= MAX_IN_FLIGHT;
    if (busy || !entry.gate.take(this.deps.now())) {
      if (entry.counts.dropped % 100 === 0)
        this.deps.logger.warn({ trigger: name, dropped: entry.counts.dropped + 1 }, "trigger-event-dropped");
      return "dropped";
    }
    return "fired";
  }
}
