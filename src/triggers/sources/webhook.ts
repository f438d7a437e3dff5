import { z } from "zod";
import type { TriggerSource } from "../../config/sections/triggers.js";
import { defineSource, type TriggerSourceModule } from "../trigger-source.js";

/** `on: {webhook: …}`. */
export const webhookOn = z.strictObject({
  webhook: z.strictObject({
    /** The HMAC-SHA256 key the sender signs `"<X-Magpie-Timestamp>.<body>"` with. */
    secret: z.string().min(16, "a webhook secret needs at least 16 characters"),
  }),
});

/**
 * `on: {webhook: {secret}}`: a signed `POST /hooks/<name>` (src/triggers/webhook-handler.ts checks the signature
 * and hands the body in). Nothing to start: the route is always there and answers 404 for unknown names.
 */
export const webhookSource: TriggerSourceModule<"webhook", typeof webhookOn> = defineSource({
  key: "webhook",
  on: webhookOn,
  listensTo: "webhook POST /hooks/<name>",
  example: '{"webhook": {"secret"}}',
  pick: (on) => ("webhook" in on ? on.webhook : undefined),
  describe: (_on, trigger) => `POST /hooks/${trigger.name}`,
  start: () => () => {},
});

/** The secret a webhook trigger's sender signs with (`/hooks/<name>` checks it), or undefined for other sources. */
export function webhookSecret(on: TriggerSource): string | undefined {
  return "webhook" in on ? on.webhook.secret : undefined;
}
