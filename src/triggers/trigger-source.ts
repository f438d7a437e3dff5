import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import type { TriggerSource, TriggerSourceKey, TriggerSourceOn } from "../config/sections/triggers.js";
import type { HardwareService } from "../hardware/hardware-service.js";
import type { NeededTool } from "../scheduler/action-runner.js";
import type { MqttHub } from "./mqtt-hub.js";
import type { TriggerDefinition, TriggerEvent } from "./trigger.js";

/** What a source works with: the config, the runtime's MQTT hub, the hardware service (with boards), the time. */
export interface SourceContext {
  config: Pick<MagpieConfig, "mqtt" | "hardware" | "timezone">;
  logger: Logger;
  now: () => number;
  /** The hardware feature's service: GPIO pins and serial ports, each opened through its one guard. */
  hardware?: HardwareService | undefined;
  /** The runtime's broker connections (the configured broker, or one the owner's file names). */
  mqtt: MqttHub;
}

/**
 * One trigger source as its module writes it (src/triggers/sources/<key>.ts), `on` typed by its config shape
 * (`triggerSourceOptions.<key>` in src/config/sections/triggers.ts).
 */
export interface TriggerSourceSpec<K extends TriggerSourceKey> {
  key: K;
  /** `on.<key>` of a trigger whose source this is, else undefined (`(on) => ("key" in on ? on.key : undefined)`). */
  pick(on: TriggerSource): TriggerSourceOn<K> | undefined;
  /** The tool behind the resource it reads: a trigger made in chat needs that tool among its creator's. */
  reaches?: NeededTool;
  /** Subscribes through the MQTT hub: attached again when the broker settings (`mqtt`) are reloaded. */
  usesBroker?: boolean;
  /** What it listens to, after the kind in `/triggers` and trigger_list (`POST /hooks/door`, `home/+/temp`). */
  describe(on: TriggerSourceOn<K>, trigger: TriggerDefinition): string;
  /**
   * What keeps the trigger from running here (checked at start-up, reload and trigger_add), each naming its key
   * under `at` (`triggers.<name>.on.<key>`). Empty when it can run.
   */
  problems?(on: TriggerSourceOn<K>, trigger: TriggerDefinition, context: SourceContext, at: string): string[];
  /**
   * Starts listening for the trigger (after `problems` found none): each happening goes to `emit` as a
   * `TriggerEvent`; returns what stops it. A device that can't be opened is logged, not thrown.
   */
  start(
    on: TriggerSourceOn<K>,
    trigger: TriggerDefinition,
    context: SourceContext,
    emit: (event: TriggerEvent) => void,
  ): (() => void) | Promise<() => void>;
}

/** A source as the runtime and the service use it, whatever its key. */
export interface TriggerSourceModule {
  key: TriggerSourceKey;
  reaches: NeededTool | undefined;
  usesBroker: boolean;
  /** True when `on` is this source's. */
  handles(on: TriggerSource): boolean;
  describe(trigger: TriggerDefinition): string;
  problems(trigger: TriggerDefinition, context: SourceContext): string[];
  start(
    trigger: TriggerDefinition,
    context: SourceContext,
    emit: (event: TriggerEvent) => void,
  ): (() => void) | Promise<() => void>;
}

/** Declares a trigger source: the spec bound to its own `on`, so the catalog can hold every source alike. */
export function defineSource<K extends TriggerSourceKey>(spec: TriggerSourceSpec<K>): TriggerSourceModule {
  const onOf = (trigger: TriggerDefinition): TriggerSourceOn<K> => {
    const on = spec.pick(trigger.on);
    if (on === undefined) throw new Error(`trigger "${trigger.name}" is not a ${spec.key} trigger`);
    return on;
  };
  return {
    key: spec.key,
    reaches: spec.reaches,
    usesBroker: spec.usesBroker ?? false,
    handles: (on) => spec.pick(on) !== undefined,
    describe: (trigger) => spec.describe(onOf(trigger), trigger),
    problems: (trigger, context) =>
      spec.problems?.(onOf(trigger), trigger, context, `triggers.${trigger.name}.on.${spec.key}`) ?? [],
    start: (trigger, context, emit) => spec.start(onOf(trigger), trigger, context, emit),
  };
}
