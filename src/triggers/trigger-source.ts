import type { Logger } from "pino";
import type { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import type { TriggerSource, TriggerSourceKey } from "../config/sections/triggers.js";
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

/** A source's `on` shape in the config: `z.strictObject({<key>: …})`, its own key only. */
export type SourceShape<K extends string> = z.ZodObject<Record<K, z.ZodType>, z.core.$strict>;

/** What `on.<key>` holds for a source of shape `S`. */
export type SourceOn<K extends string, S extends SourceShape<K>> = z.output<S["shape"][K]>;

/**
 * One trigger source as its module writes it (src/triggers/sources/<key>.ts): its config `on` shape and its
 * behaviour, `on` typed by the shape. src/config/sections/triggers.ts builds the `on` union from these shapes.
 */
export interface TriggerSourceSpec<K extends string, S extends SourceShape<K>> {
  key: K;
  /** The `on` shape the config, the stored-trigger check and trigger_add's parameters accept for this source. */
  on: S;
  /** What trigger_add's description says it listens to ("an MQTT topic"). */
  listensTo: string;
  /** trigger_add's example of its `on` (`{"mqtt": {"topic"}}`). */
  example: string;
  /** `on.<key>` of a trigger whose source this is, else undefined (`(on) => ("key" in on ? on.key : undefined)`). */
  pick(on: TriggerSource): SourceOn<K, S> | undefined;
  /** The tool behind the resource it reads: a trigger made in chat needs that tool among its creator's. */
  reaches?: NeededTool;
  /** Subscribes through the MQTT hub: attached again when the broker settings (`mqtt`) are reloaded. */
  usesBroker?: boolean;
  /** What it listens to, after the kind in `/triggers` and trigger_list (`POST /hooks/door`, `home/+/temp`). */
  describe(on: SourceOn<K, S>, trigger: TriggerDefinition): string;
  /**
   * What keeps the trigger from running here (checked at start-up, reload and trigger_add), each naming its key
   * under `at` (`triggers.<name>.on.<key>`). Empty when it can run.
   */
  problems?(on: SourceOn<K, S>, trigger: TriggerDefinition, context: SourceContext, at: string): string[];
  /**
   * Starts listening for the trigger (after `problems` found none): each happening goes to `emit` as a
   * `TriggerEvent`; returns what stops it. A device that can't be opened is logged, not thrown.
   */
  start(
    on: SourceOn<K, S>,
    trigger: TriggerDefinition,
    context: SourceContext,
    emit: (event: TriggerEvent) => void,
  ): (() => void) | Promise<() => void>;
}

/**
 * A source as the catalog, the runtime and the service use it, whatever its key. A module's constant names its
 * key and shape (`TriggerSourceModule<"cron", typeof cronOn>`): the config derives its types from the catalog,
 * so an inferred type here would depend on itself.
 */
export interface TriggerSourceModule<
  K extends string = TriggerSourceKey,
  S extends z.ZodObject = z.ZodObject,
> {
  key: K;
  on: S;
  listensTo: string;
  example: string;
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
export function defineSource<K extends string, S extends SourceShape<K>>(
  spec: TriggerSourceSpec<K, S>,
): TriggerSourceModule<K, S> {
  const onOf = (trigger: TriggerDefinition): SourceOn<K, S> => {
    const on = spec.pick(trigger.on);
    if (on === undefined) throw new Error(`trigger "${trigger.name}" is not a ${spec.key} trigger`);
    return on;
  };
  return {
    key: spec.key,
    on: spec.on,
    listensTo: spec.listensTo,
    example: spec.example,
    reaches: spec.reaches,
    usesBroker: spec.usesBroker ?? false,
    handles: (on) => spec.pick(on) !== undefined,
    describe: (trigger) => spec.describe(onOf(trigger), trigger),
    problems: (trigger, context) =>
      spec.problems?.(onOf(trigger), trigger, context, `triggers.${trigger.name}.on.${spec.key}`) ?? [],
    start: (trigger, context, emit) => spec.start(onOf(trigger), trigger, context, emit),
  };
}
