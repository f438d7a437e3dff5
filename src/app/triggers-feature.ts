import { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import { ConfigError } from "../lib/errors.js";
import { SeenSignatures } from "../triggers/seen-signatures.js";
import type { TriggerDefinition } from "../triggers/trigger.js";
import type { TriggerRuntime } from "../triggers/trigger-runtime.js";
import { TriggerService } from "../triggers/trigger-service.js";
import { triggersCommand } from "../triggers/triggers-command.js";
import { watchTriggers } from "../triggers/watch-triggers.js";
import { createWebhookHandler, MAX_REMEMBERED_SIGNATURES } from "../triggers/webhook-handler.js";
import type { AppContext, MagpieFeature } from "./feature.js";

/** kv key of this install's MQTT client id (the broker keeps the session under it). */
const MQTT_CLIENT_ID_KEY = "triggers.mqtt_client_id";

/**
 * Triggers (DESIGN.md → Triggers): events from webhooks, MQTT, GPIO, serial lines and cron checks, gated by a
 * predicate before anything runs; `/triggers`, `POST /hooks/<name>` and the service behind the trigger tools
 * and `mqtt_publish`. The pins `hardware.watch` watches run here too, as gpio triggers made at load. The runtime (CEL predicates, the MQTT client) is loaded only when a trigger exists or a
 * tool asks for it: a box without triggers loads neither.
 */
export function createTriggersFeature(): MagpieFeature {
  return {
    name: "triggers",
    provides: ["triggers"],
    uses: ["authority", "hardware"],
    async setup(config, app) {
      const service = new TriggerService({
        config: () => config.triggers,
        // `hardware.watch` is restart-only; its triggers need the hardware feature's service (boards).
        watches: () => (app.services.hardware ? watchTriggers(config.hardware) : []),
        kv: app.store.kv,
        authority: () => app.ports.authority(),
        load: (definitions) => loadRuntime(config, app, definitions),
      });
      app.services.triggers = service;
      const webhook = createWebhookHandler(
        {
          secretOf: (name) => service.loaded()?.secretOf(name),
          handle: (name, event) => service.loaded()?.handle(name, event) ?? "dropped",
        },
        new SeenSignatures(app.store.db, MAX_REMEMBERED_SIGNATURES),
        () => app.clock.now(),
      );
      // Configured triggers are checked now: a bad `when` stops start-up with its key named.
      if (service.hasTriggers()) await service.ready();
      return {
        commands: [triggersCommand(service)],
        routes: [{ method: "POST", path: "/hooks/:name", handler: webhook }],
        stop: async () => {
          await service.loaded()?.close();
        },
      };
    },
    async reload(_config, app, change) {
      const mqttChanged = change.touches("mqtt");
      if (!change.touches("triggers") && !mqttChanged) return;
      const service = app.services.triggers;
      if (!service) return;
      const result = await service.reload({ mqttChanged });
      app.logger.info({ ...result, mqttChanged }, "triggers-reloaded");
    },
  };
}

async function loadRuntime(
  config: MagpieConfig,
  app: AppContext,
  definitions: TriggerDefinition[],
): Promise<TriggerRuntime> {
  const { TriggerRuntime } = await import("../triggers/trigger-runtime.js");
  const { createTriggerActions } = await import("../triggers/trigger-actions.js");
  const { createActionRunner } = await import("../scheduler/action-runner.js");
  const { newClientIdPrefix } = await import("../triggers/mqtt-hub.js");
  const { watchRecord } = await import("../triggers/watch-triggers.js");
  const logger = app.logger.child({ module: "triggers" });
  let clientId = app.store.kv.get(MQTT_CLIENT_ID_KEY, z.string());
  if (!clientId) {
    clientId = newClientIdPrefix();
    app.store.kv.set(MQTT_CLIENT_ID_KEY, clientId);
  }
  const runtime = new TriggerRuntime({
    config,
    logger,
    now: () => app.clock.now(),
    events: app.events,
    ...(app.services.hardware ? { hardware: app.services.hardware } : {}),
    judged: (trigger, event, result) => {
      // A `hardware.watch` edge goes into the pin event log (`gpio list` shows it) with where it went.
      const record = watchRecord(trigger, event, result);
      if (record) app.services.hardware?.events?.record(record.edge, record.delivered);
    },
    kv: app.store.kv,
    mqttClientId: clientId,
    run: createTriggerActions({
      runner: createActionRunner({
        messenger: app.messenger,
        notifier: app.services.notifier,
        tools: app.tools,
        agent: app.agent,
        authority: () => app.ports.authority(),
        logger,
        maxMessageLength: (channel) => app.channels.get(channel)?.capabilities.maxMessageLength ?? 4_000,
        note: (note) => void app.messenger.note(note),
        kv: app.store.kv,
      }),
      runTimeoutMs: config.cron.runTimeoutSecs * 1000,
    }),
  });
  const fromConfig = definitions.filter((definition) => definition.source === "config");
  const problems = fromConfig.flatMap((definition) => runtime.problems(definition));
  if (problems.length > 0) {
    await runtime.close();
    throw new ConfigError(problems);
  }
  for (const definition of definitions) {
    const stale = definition.source === "chat" ? runtime.problems(definition) : [];
    // A trigger made in chat that no longer fits the config (a pin removed) waits, said loudly, until fixed.
    if (stale.length > 0) logger.error({ trigger: definition.name, problems: stale }, "trigger-not-started");
    else await runtime.put(definition);
  }
  logger.info({ triggers: definitions.map((definition) => definition.name) }, "triggers-configured");
  return runtime;
}

export const triggersFeature = createTriggersFeature();
