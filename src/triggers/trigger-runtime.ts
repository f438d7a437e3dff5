import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import type { EventPublisher } from "../core/events.js";
import type { PinEdge } from "../hardware/gpio-service.js";
import type { HardwareService } from "../hardware/hardware-service.js";
import { errorMessage } from "../lib/errors.js";
import { compileCron, cronProblem } from "../scheduler/cron-expression.js";
import type { KvRepository } from "../store/kv.js";
import { linearRegex } from "./linear-regex.js";
import { sameBroker } from "./mqtt-broker.js";
import { MqttHub } from "./mqtt-hub.js";
import { chatFilterProblem, topicFilterProblem } from "./mqtt-topic.js";
import { predicateProblem } from "./predicate.js";
import { RetainedLedger } from "./retained-ledger.js";
import type { TriggerCounts, TriggerDefinition, TriggerEvent, TriggerResult } from "./trigger.js";
import { creationRefusal } from "./trigger-authority.js";
import { type ActionRunner, type JudgedListener, TriggerEngine } from "./trigger-engine.js";
import { parseBody } from "./webhook-handler.js";

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
 * The trigger engine with its sources attached: MQTT subscriptions, GPIO edges, serial lines and cron checks
 * start when a trigger is put and stop when it is removed; webhooks arrive through `/hooks/<name>`.
 * Loaded only when a trigger exists (the predicate engine and the MQTT client with it).
 */
export class TriggerRuntime {
  readonly engine: TriggerEngine;
  readonly mqtt: MqttHub;
  private readonly retained: RetainedLedger;
  private readonly detach = new Map<string, () => void>();
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
      ownerNamed: () => ownerNamedBrokers(deps.config.triggers),
      retained: this.retained,
    });
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
    const on = trigger.on;
    if ("mqtt" in on) problems.push(...this.mqttProblems(trigger, on.mqtt, at));
    if ("gpio" in on) {
      const pin = this.deps.config.hardware.pins[on.gpio.pin];
      if (!pin)
        problems.push(`${at}.on.gpio.pin: unknown pin "${on.gpio.pin}" (declare it in hardware.pins)`);
      else if (!pin.edge)
        problems.push(`${at}.on.gpio.pin: pin "${on.gpio.pin}" needs an \`edge\` in hardware.pins`);
      else if (!this.deps.hardware) problems.push(`${at}.on.gpio: no hardware.boards are configured`);
    }
    if ("serial" in on) {
      const compiled = linearRegex(on.serial.match);
      if (typeof compiled === "string") problems.push(`${at}.on.serial.match: ${compiled}`);
      const serial = this.deps.hardware?.serial;
      if (!serial)
        problems.push(
          `${at}.on.serial: no hardware.boards are configured (a serial trigger reads a board's port)`,
        );
      else if (!serial.configuredPort(on.serial.port))
        problems.push(
          `${at}.on.serial.port: "${on.serial.port}" is not a configured board's port — name a board from hardware.boards or its port`,
        );
    }
    if ("cron" in on) {
      const problem = cronProblem(on.cron);
      if (problem) problems.push(`${at}.on.cron: ${problem}`);
    }
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
    const stop = await this.attach(trigger);
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
    if (!trigger?.enabled || !("webhook" in trigger.on)) return undefined;
    return trigger.on.webhook.secret;
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

  /**
   * An MQTT trigger's broker and filter: a trigger made in chat uses the configured broker only (its credentials go
   * nowhere else) and names at least one topic level; the owner's config file may name another broker.
   */
  private mqttProblems(
    trigger: TriggerDefinition,
    mqtt: { topic: string; url?: string },
    at: string,
  ): string[] {
    const problems: string[] = [];
    const configured = this.deps.config.mqtt.url;
    const filterProblem = topicFilterProblem(mqtt.topic);
    if (filterProblem) problems.push(`${at}.on.mqtt.topic: ${filterProblem}`);
    if (trigger.source === "chat") {
      const broad = chatFilterProblem(mqtt.topic);
      if (broad) problems.push(`${at}.on.mqtt.topic: ${broad}`);
      if (mqtt.url !== undefined && !(configured && sameBroker(mqtt.url, configured)))
        problems.push(
          `${at}.on.mqtt.url: a trigger made in chat reads the configured broker (mqtt.url) only — leave url out`,
        );
    }
    if (!configured && mqtt.url === undefined)
      problems.push(`${at}.on.mqtt: no broker — set mqtt.url (or on.mqtt.url)`);
    return problems;
  }

  private async attach(trigger: TriggerDefinition): Promise<() => void> {
    const { name, on } = trigger;
    const logger = this.deps.logger;
    if ("webhook" in on) return () => {};
    if ("mqtt" in on) {
      const request = {
        ...(on.mqtt.url !== undefined ? { url: on.mqtt.url } : {}),
        ownerNamed: trigger.source === "config",
        filter: on.mqtt.topic,
        key: name,
      };
      return this.mqtt.subscribe(request, ({ topic, payload }) => {
        this.handle(name, { source: "mqtt", topic, payload: parseBody(payload), at: this.deps.now() });
      });
    }
    if ("gpio" in on) {
      const hardware = this.deps.hardware;
      if (!hardware) return () => {};
      const wanted = on.gpio.edge ?? "both";
      const stop = hardware.gpio.onEdge((edge: PinEdge) => {
        if (edge.pin !== on.gpio.pin || (wanted !== "both" && wanted !== edge.edge)) return;
        this.handle(name, {
          source: "gpio",
          pin: edge.pin,
          value: edge.value,
          edge: edge.edge,
          payload: { pin: edge.pin, value: edge.value, edge: edge.edge },
          at: edge.at.getTime(),
        });
      });
      await hardware.gpio.watch(on.gpio.pin).catch((error: unknown) => {
        // The box lacks the device or the permission: said loudly; the app still runs (doctor names the fix).
        logger.error(
          { trigger: name, pin: on.gpio.pin, error: errorMessage(error) },
          "trigger-gpio-watch-failed",
        );
      });
      return stop;
    }
    if ("serial" in on) return this.attachSerial(trigger, on.serial);
    return this.attachCron(trigger, on.cron);
  }

  /** Lines of a configured board's port, through the hardware service's serial manager (its one guard). */
  private async attachSerial(
    trigger: TriggerDefinition,
    serial: { port: string; baud?: number; match: string },
  ): Promise<() => void> {
    const pattern = linearRegex(serial.match);
    const manager = this.deps.hardware?.serial;
    if (typeof pattern === "string" || !manager) return () => {};
    const logger = this.deps.logger;
    try {
      return await manager.listen(serial.port, serial.baud, {
        line: (line) => this.serialLine(trigger.name, pattern, line),
        closed: (error) =>
          logger.error(
            { trigger: trigger.name, port: serial.port, error: error ? errorMessage(error) : "closed" },
            "trigger-serial-closed",
          ),
      });
    } catch (error) {
      logger.error(
        { trigger: trigger.name, port: serial.port, error: errorMessage(error) },
        "trigger-serial-open-failed",
      );
      return () => {};
    }
  }

  private serialLine(name: string, pattern: RegExp, line: string): void {
    const match = pattern.exec(line);
    if (!match) return;
    this.handle(name, {
      source: "serial",
      line,
      payload: { line, groups: match.slice(1), named: match.groups ?? {} },
      at: this.deps.now(),
    });
  }

  private attachCron(trigger: TriggerDefinition, expression: string): () => void {
    const schedule = compileCron(expression, this.deps.config.timezone);
    let timer: NodeJS.Timeout | null = null;
    const arm = () => {
      const now = this.deps.now();
      const due = schedule.next(now);
      // Long waits are taken in steps: setTimeout can't wait past ~24.8 days.
      const wait = Math.min(due - now, 2 ** 31 - 1);
      timer = setTimeout(
        () => {
          const at = this.deps.now();
          if (at >= due)
            this.handle(trigger.name, { source: "cron", payload: { at: new Date(at).toISOString() }, at });
          arm();
        },
        Math.max(wait, 0),
      );
      timer.unref();
    };
    arm();
    return () => {
      if (timer) clearTimeout(timer);
    };
  }
}

/** The brokers the owner's config file names in its triggers (`on.mqtt.url`). */
function ownerNamedBrokers(triggers: MagpieConfig["triggers"]): string[] {
  return Object.values(triggers).flatMap((trigger) =>
    "mqtt" in trigger.on && trigger.on.mqtt.url !== undefined ? [trigger.on.mqtt.url] : [],
  );
}
