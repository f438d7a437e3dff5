import { z } from "zod";
import { topicMatches } from "../triggers/mqtt-topic.js";
import { defineTool, ToolError } from "./define-tool.js";
import { requireHighRisk } from "./hardware-support.js";
import { refuseOutboundLeak } from "./outbound-check.js";
import { triggerCall, triggersOf } from "./trigger-shared.js";

export const mqttPublishTool = defineTool({
  name: "mqtt_publish",
  description:
    "Publish a message to the MQTT broker (mqtt.url): a topic without wildcards and a text or JSON payload. Topics outside mqtt.publishAllow count as high risk (they may switch things in the house).",
  inputSchema: z.object({
    topic: z.string().min(1).max(1_024).describe("e.g. home/livingroom/lamp/set"),
    payload: z
      .string()
      .max(256 * 1024)
      .describe("Text or JSON text."),
    retain: z
      .boolean()
      .optional()
      .describe("Keep it as the topic's last value on the broker (default false)."),
    qos: z
      .union([z.literal(0), z.literal(1), z.literal(2)])
      .optional()
      .describe("0, 1 (default) or 2."),
  }),
  // Its real risk depends on the topic: high unless mqtt.publishAllow matches (checked in execute).
  risk: "medium",
  isEnabled: (config) => config.mqtt.url !== undefined,
  async execute(input, context) {
    if (/[+#\0]/.test(input.topic))
      throw new ToolError(
        "mqtt.bad_topic",
        `"${input.topic}" has a wildcard (+ or #); publish to one topic.`,
      );
    refuseOutboundLeak(context, [{ kind: "body", value: input.payload }]);
    const allowed = context.config.mqtt.publishAllow.some((filter) => topicMatches(filter, input.topic));
    if (!allowed)
      await requireHighRisk(context, `mqtt_publish ${input.topic} ← ${input.payload.slice(0, 200)}`);
    const triggers = triggersOf(context);
    return triggerCall(async () => {
      const runtime = await triggers.ready();
      if (!context.config.mqtt.url) throw new ToolError("mqtt.not_configured", "Set mqtt.url to publish.");
      // The hub reaches the configured broker only (with its credentials).
      await runtime.mqtt.publish(input.topic, input.payload, {
        qos: input.qos ?? 1,
        retain: input.retain ?? false,
      });
      return { published: true, topic: input.topic, bytes: Buffer.byteLength(input.payload) };
    });
  },
});
