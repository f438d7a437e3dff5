import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import type { EventPublisher } from "../core/events.js";
import type { HardwareService } from "../hardware/hardware-service.js";
import type { KvRepository } from "../store/kv.js";
import { MqttHub } from "./mqtt-hub.js";
import { predicateProblem } from "./predicate.js";
import { RetainedLedger } from "./retained-ledger.js";
import { sourceOf } from "./sources/index.js";
import { ownerNamedBrokers } from "./sources/mqtt.js";
import { webhookSecret } from "./sources/webhook.js";
import type { TriggerCounts, TriggerDefinition, TriggerEvent, TriggerResult } from "./trigger.js";
import { creationRefusal } from "./trigger-authority.js";
import { type ActionRunner, type JudgedListener, TriggerEngine } from "./trigger-engine.js";
import type { SourceContext } from "./trigger-source.js";

export interface TriggerRuntimeDeps {
  config: Pick<MagpieConfig, "mqtt" | "hardware" | "timezone" | "notify" | "triggers">;
  run: ActionRunner;
  logger: Logger;
  now: () => number;
  events?: EventPublisher;
  /** Told of every judged event (the pin event log records what `hardware.watch` triggers did). */
  judged?: JudgedListener;
  /** The hardware feature's service, for GPIO and serial sources (absent without boards). */
  hardware?: HardwareService;
  /** Where the last handled retained MQTT message per trigger and topic is kept. */
  kv: KvRepository;
  /** Stable per install: MQTT session ids. */
  mqttClientId: string;
}

/**
 * The trigger engine with its sources attached: each trigger's source (src/triggers/sources/, one module per `on`
 * key) starts when the trigger is put and stops when it is removed; webhooks arrive through `/hooks/<name>`.
 * Loaded only when a trigger exists (the predicate engine and the MQTT client with it).
 */
export class TriggerRuntime {
  readonly engine: TriggerEngine;
  readonly mqtt: MqttHub;
  private readonly retained: RetainedLedger;
  private readonly detach = new Map<string, () => void>();
  /** What every source works with (src/triggers/trigger-source.ts). */
  private readonly context: SourceContext;
  private closed = false;

  constructor(private readonly deps: TriggerRuntimeDeps) {
    this.engine = new TriggerEngine({
      run: deps.run,
      logger: deps.logger,
      now: deps.now,
      ...(deps.events ? { events: deps.events } : {}),
      ...(deps.judged ? { judged: deps.judged } : {}),
    });
    this.retained = new RetainedLedger(deps.kv);
    this.mqtt = new MqttHub({
      logger: deps.logger,
      clientIdPrefix: deps.mqttClientId,
      settings: () => deps.config.mqtt,
      ownerNamed: () => ownerNamedBrokers(Object.values(deps.config.triggers)),
      retained: this.retained,
    });
    this.context = {
      config: deps.config,
      logger: deps.logger,
      now: deps.now,
      hardware: deps.hardware,
      mqtt: this.mqtt,
    };
  }

  /**
   * Problems with a trigger, each naming its key (`triggers.<name>.when: …`); empty when it can run here.
   * Checked before `put`, at start-up for the config (a config error) and by trigger_add.
   */
  problems(trigger: TriggerDefinition): string[] {
    const at = `triggers.${trigger.name}`;
    const problems: string[] = [];
    // A trigger made in chat reaches a device, pin or broker only if its creator's turn had the tool for it.
    const refusal = trigger.source === "chat" ? creationRefusal(trigger) : null;
    if (refusal) problems.push(`${at}: ${refusal.message}`);
    if (trigger.when !== undefined) {
      const problem = predicateProblem(trigger.when);
      if (problem) problems.push(`${at}.when: ${problem}`);
    }
    problems.push(...sourceOf(trigger.on).problems(trigger, this.context));
    const { pushover, ntfy } = this.deps.config.notify;
    if (trigger.deliver.pushover && !(pushover.token && pushover.user))
      problems.push(
        `${at}.deliver.pushover: notify.pushover.token/user are not set (PUSHOVER_TOKEN, PUSHOVER_USER_KEY)`,
      );
    if (trigger.deliver.ntfy && !(ntfy.url && ntfy.topic))
      problems.push(`${at}.deliver.ntfy: notify.ntfy.url/topic are not set (NTFY_URL, NTFY_TOPIC)`);
    return problems;
  }

  /** Adds or replaces a trigger and (re)attaches its source. Call `problems` first. */
  async put(trigger: TriggerDefinition): Promise<void> {
    this.detach.get(trigger.name)?.();
    this.detach.delete(trigger.name);
    this.engine.put(trigger);
    if (!trigger.enabled) return;
    const stop = await sourceOf(trigger.on).start(trigger, this.context, (event) =>
      this.handle(trigger.name, event),
    );
    if (this.closed) stop();
    else this.detach.set(trigger.name, stop);
  }

  remove(name: string): boolean {
    this.detach.get(name)?.();
    this.detach.delete(name);
    this.retained.forget(name);
    return this.engine.remove(name);
  }

  /** Judges one event (webhooks come in here). */
  handle(name: string, event: TriggerEvent): TriggerResult {
    return this.engine.handle(name, event);
  }

  /** The webhook secret of an enabled webhook trigger, or undefined (unknown names look the same). */
  secretOf(name: string): string | undefined {
    const trigger = this.engine.get(name);
    return trigger?.enabled ? webhookSecret(trigger.on) : undefined;
  }

  list(): { definition: TriggerDefinition; counts: TriggerCounts }[] {
    return this.engine.list();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const stop of this.detach.values()) stop();
    this.detach.clear();
    await this.mqtt.close();
  }
}
