import type { TriggerSource } from "../../config/sections/triggers.js";
import type { TriggerSourceModule } from "../trigger-source.js";
import { cronSource } from "./cron.js";
import { gpioSource } from "./gpio.js";
import { mqttSource } from "./mqtt.js";
import { serialSource } from "./serial.js";
import { webhookSource } from "./webhook.js";

/**
 * THE list of trigger sources (docs/architecture.md → "Adding a trigger source"): one line per module of this
 * folder, keyed by its `on` key. Each module brings its `on` shape: the config's `on` union (and so its types, the
 * stored-trigger check and trigger_add's parameters) derives from this list. The engine, the runtime, `/triggers`,
 * trigger_add and the authority rule all read it; test/triggers/source-catalog.test.ts checks every file here is
 * listed and every `on` shape comes from its module.
 */
export const triggerSources = {
  webhook: webhookSource,
  mqtt: mqttSource,
  gpio: gpioSource,
  serial: serialSource,
  cron: cronSource,
} as const;

/** The source of a trigger's `on` (exactly one: the config schema and the stored-trigger schema say so). */
export function sourceOf(on: TriggerSource): TriggerSourceModule {
  const source = Object.values(triggerSources).find((candidate) => candidate.handles(on));
  if (!source) throw new Error(`no trigger source for on: ${Object.keys(on).join(", ")}`);
  return source;
}
