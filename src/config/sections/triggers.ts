import { z } from "zod";
import { triggerSources } from "../../triggers/sources/index.js";
import { idSchema } from "./common.js";

/** Trigger names are path segments (`POST /hooks/<name>`) and kv keys: letters, digits, '-' and '_'. */
export const TRIGGER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The trigger source catalog (src/triggers/sources/index.ts): each source's module brings its own `on` shape. */
type TriggerSources = typeof triggerSources;

/** The `on` keys, in catalog order. */
export const TRIGGER_SOURCE_KEYS = Object.keys(triggerSources);

/**
 * Where a trigger's events come from (DESIGN.md → Triggers): exactly one source of the catalog, each option the
 * `on` shape its module brings (docs/architecture.md → "Adding a trigger source"; the arrow config → triggers is
 * justified in test/import-layers.test.ts).
 */
export const triggerSourceSchema = z.union(
  Object.values(triggerSources).map((source) => source.on),
  {
    error: `give exactly one of ${TRIGGER_SOURCE_KEYS.slice(0, -1).join(", ")} or ${TRIGGER_SOURCE_KEYS.at(-1)}`,
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
export type TriggerSourceKey = keyof TriggerSources;
export type TriggerAction = z.infer<typeof triggerActionSchema>;
export type TriggerDeliver = z.infer<typeof triggerDeliverSchema>;
export type MqttConfig = z.infer<typeof mqttSchema>;
