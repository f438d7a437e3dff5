import { z } from "zod";
import { idSchema } from "./common.js";

/** Trigger names are path segments (`POST /hooks/<name>`) and kv keys: letters, digits, '-' and '_'. */
export const TRIGGER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const webhookSource = z.strictObject({
  webhook: z.strictObject({
    /** The HMAC-SHA256 key the sender signs `"<X-Magpie-Timestamp>.<body>"` with. */
    secret: z.string().min(16, "a webhook secret needs at least 16 characters"),
  }),
});

const mqttSource = z.strictObject({
  mqtt: z.strictObject({
    /** An MQTT topic filter; `+` and `#` wildcards. */
    topic: z.string().min(1),
    /** Another broker than the top-level `mqtt.url`. */
    url: z.string().url().optional(),
  }),
});

const gpioSource = z.strictObject({
  gpio: z.strictObject({
    /** A `hardware.pins` entry with an edge. */
    pin: z.string().min(1),
    /** Only these edges (default: every edge the pin reports). */
    edge: z.enum(["rising", "falling", "both"]).optional(),
  }),
});

const serialSource = z.strictObject({
  serial: z.strictObject({
    /** The serial device (`/dev/ttyACM0`) or a `hardware.boards` name. */
    port: z.string().min(1),
    baud: z.number().int().positive().optional(),
    /** A regular expression a line must match; run by a linear-time engine (no backreferences or lookaround). */
    match: z.string().min(1),
  }),
});

const cronSource = z.strictObject({
  /** A cron expression: the trigger's `when` is checked on this schedule. */
  cron: z.string().min(1),
});

/** Where a trigger's events come from (DESIGN.md → Triggers). */
export const triggerSourceSchema = z.union(
  [webhookSource, mqttSource, gpioSource, serialSource, cronSource],
  {
    error: "give exactly one of webhook, mqtt, gpio, serial or cron",
  },
);

/** What a fired trigger does. */
export const triggerActionSchema = z.union(
  [
    z.strictObject({ message: z.string().min(1) }),
    z.strictObject({ command: z.string().min(1) }),
    z.strictObject({
      prompt: z.string().min(1),
      agent: z.string().min(1).optional(),
      /** A tool set name or a list of tool names (default: `default`). */
      toolSet: z.union([z.string().min(1), z.array(z.string().min(1))]).optional(),
      /**
       * Tools the run may still use after its payload (untrusted content) entered it; anything else that
       * communicates or changes lasting state is refused (DESIGN.md → Security → "Untrusted content").
       */
      allowAfterUntrusted: z.array(z.string().min(1)).optional(),
    }),
  ],
  { error: "give exactly one of message (text), command (shell) or prompt (agent turn)" },
);

/** Where a trigger's message, command output or answer goes. */
export const triggerDeliverSchema = z.strictObject({
  channel: z.string().min(1).optional(),
  chat_id: idSchema.optional(),
  pushover: z.boolean().default(false),
  ntfy: z.boolean().default(false),
});

/** One trigger: an event source, a predicate, an action and its limits. */
export const triggerSchema = z
  .strictObject({
    on: triggerSourceSchema,
    /** A CEL expression over `event`; false or an error means nothing happens. */
    when: z.string().min(1).max(4_000).optional(),
    do: triggerActionSchema,
    deliver: triggerDeliverSchema.optional(),
    /** After firing, events within this many seconds are dropped (a bouncing input). */
    cooldownSecs: z.number().int().min(0).max(86_400).default(0),
    /** At most this many firings per rolling hour; more are dropped and counted. */
    maxPerHour: z.number().int().min(1).max(3_600).default(60),
    enabled: z.boolean().default(true),
  })
  .superRefine((trigger, issue) => {
    const deliver = trigger.deliver;
    if (deliver && (deliver.channel === undefined) !== (deliver.chat_id === undefined))
      issue.addIssue({
        code: "custom",
        path: ["deliver"],
        message: "deliver needs both channel and chat_id, or neither",
      });
    if (!deliver?.channel && !deliver?.pushover && !deliver?.ntfy)
      issue.addIssue({
        code: "custom",
        path: ["deliver"],
        message: "deliver somewhere: channel + chat_id, pushover: true and/or ntfy: true",
      });
  });

/** `triggers`: events gated before the LLM, by name. */
export const triggersSchema = z
  .record(
    z.string().regex(TRIGGER_NAME, "trigger names are 1–64 letters, digits, '-' and '_'"),
    triggerSchema,
  )
  .default({});

/** `mqtt`: the broker MQTT triggers and `mqtt_publish` use. */
export const mqttSchema = z
  .strictObject({
    /** `mqtt://host:1883`, `mqtts://…`, `ws://…`. */
    url: z.string().url().optional(),
    username: z.string().min(1).optional(),
    password: z.string().min(1).optional(),
    /** Topic filters `mqtt_publish` may publish to without an owner's approval (`+`/`#` wildcards). */
    publishAllow: z.array(z.string().min(1)).default([]),
  })
  .prefault({});

export type TriggerConfig = z.infer<typeof triggerSchema>;
export type TriggersConfig = z.infer<typeof triggersSchema>;
export type TriggerSource = z.infer<typeof triggerSourceSchema>;
export type TriggerAction = z.infer<typeof triggerActionSchema>;
export type TriggerDeliver = z.infer<typeof triggerDeliverSchema>;
export type MqttConfig = z.infer<typeof mqttSchema>;
