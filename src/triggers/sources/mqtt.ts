import { z } from "zod";
import type { TriggerSource } from "../../config/sections/triggers.js";
import { sameBroker } from "../mqtt-broker.js";
import { chatFilterProblem, topicFilterProblem } from "../mqtt-topic.js";
import { defineSource, type TriggerSourceModule } from "../trigger-source.js";
import { parseBody } from "../webhook-handler.js";

/** `on: {mqtt: …}`. */
export const mqttOn = z.strictObject({
  mqtt: z.strictObject({
    /** An MQTT topic filter; `+` and `#` wildcards. */
    topic: z.string().min(1),
    /** Another broker than the top-level `mqtt.url`. */
    url: z.string().url().optional(),
  }),
});

/**
 * `on: {mqtt: {topic, url?}}`: messages on a topic filter, through the runtime's MQTT hub. A trigger made in chat
 * uses the configured broker only (its credentials go nowhere else) and names at least one topic level; the
 * owner's config file may name another broker.
 */
export const mqttSource: TriggerSourceModule<"mqtt", typeof mqttOn> = defineSource({
  key: "mqtt",
  on: mqttOn,
  listensTo: "an MQTT topic",
  example: '{"mqtt": {"topic"}}',
  pick: (on) => ("mqtt" in on ? on.mqtt : undefined),
  reaches: { tool: "mqtt_publish", does: "reads the MQTT broker" },
  usesBroker: true,
  describe: (on) => on.topic,
  problems(on, trigger, context, at) {
    const problems: string[] = [];
    const configured = context.config.mqtt.url;
    const filterProblem = topicFilterProblem(on.topic);
    if (filterProblem) problems.push(`${at}.topic: ${filterProblem}`);
    if (trigger.source === "chat") {
      const broad = chatFilterProblem(on.topic);
      if (broad) problems.push(`${at}.topic: ${broad}`);
      if (on.url !== undefined && !(configured && sameBroker(on.url, configured)))
        problems.push(
          `${at}.url: a trigger made in chat reads the configured broker (mqtt.url) only — leave url out`,
        );
    }
    if (!configured && on.url === undefined)
      problems.push(`${at}: no broker — set mqtt.url (or on.mqtt.url)`);
    return problems;
  },
  start(on, trigger, context, emit) {
    const request = {
      ...(on.url !== undefined ? { url: on.url } : {}),
      ownerNamed: trigger.source === "config",
      filter: on.topic,
      key: trigger.name,
    };
    return context.mqtt.subscribe(request, ({ topic, payload }) => {
      emit({ source: "mqtt", topic, payload: parseBody(payload), at: context.now() });
    });
  },
});

/** The brokers the owner's config file names in its triggers (`on.mqtt.url`): the hub may connect to these. */
export function ownerNamedBrokers(triggers: readonly { on: TriggerSource }[]): string[] {
  return triggers.flatMap(({ on }) => {
    const url = "mqtt" in on ? on.mqtt.url : undefined;
    return url !== undefined ? [url] : [];
  });
}
