import type { TriggerAction, TriggerSource, TriggerSourceKey } from "../config/sections/triggers.js";
import type { ReplyTarget } from "../core/types.js";
import type { JobCreator } from "../scheduler/job.js";

/** What a trigger's source saw: the `event` its `when` and templates read (DESIGN.md → Triggers). */
export interface TriggerEvent {
  /** The `on` key of the source that saw it (src/triggers/sources/). */
  source: TriggerSourceKey;
  /** Parsed JSON, or the text when it isn't JSON. */
  payload: unknown;
  topic?: string;
  pin?: string;
  value?: number;
  edge?: "rising" | "falling";
  line?: string;
  headers?: Record<string, string>;
  /** When the source saw it (epoch ms). */
  at: number;
}

/** One place a `hardware.watch` edge goes: a chat (or, with `prompt`, a turn there) and/or the phone. */
export interface WatchTarget {
  chat?: ReplyTarget;
  pushover: boolean;
  /** The chat's agent gets the edge with this request (an event note: a follow-up turn in that chat). */
  prompt?: string;
}

/**
 * What a `hardware.watch` pin does with an edge (src/triggers/watch-triggers.ts): report it to each watch's
 * targets. Never from the config's `triggers` or from chat — the watches of a pin become one trigger at load.
 */
export interface WatchAction {
  watch: { pin: string; targets: WatchTarget[] };
}

/** What became of one event (`magpie_trigger_events_total{result}`). */
export type TriggerResult = "fired" | "filtered" | "error" | "dropped";

/**
 * One trigger as it runs, from the config or made in chat. A config trigger is the owners'; a chat trigger
 * carries its creator's identity, tool set and chat exactly like a job (src/scheduler/action-runner.ts).
 */
export interface TriggerDefinition {
  name: string;
  on: TriggerSource;
  when?: string;
  do: TriggerAction | WatchAction;
  /** Chat target and phone notification. */
  deliver: { chat?: ReplyTarget; pushover: boolean; ntfy?: boolean };
  cooldownSecs: number;
  maxPerHour: number;
  /** A cap per rolling minute that replaces `maxPerHour`'s hourly window (`hardware.watch`'s `maxPerMinute`). */
  maxPerMinute?: number;
  enabled: boolean;
  source: "config" | "chat";
  creator: JobCreator;
  /** The chat it was made in (chat triggers): where its approval requests go. */
  createdFrom?: ReplyTarget;
}

/** Counts since start, as `/triggers` and `trigger_list` show them. */
export interface TriggerCounts {
  fired: number;
  filtered: number;
  errors: number;
  dropped: number;
}

/** The kind of an action, for listings. */
export function actionKind(action: TriggerDefinition["do"]): "message" | "command" | "prompt" | "watch" {
  if ("watch" in action) return "watch";
  if ("message" in action) return "message";
  if ("command" in action) return "command";
  return "prompt";
}
