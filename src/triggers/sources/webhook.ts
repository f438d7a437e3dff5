import type { TriggerSource } from "../../config/sections/triggers.js";
import { defineSource } from "../trigger-source.js";

/**
 * `on: {webhook: {secret}}`: a signed `POST /hooks/<name>` (src/triggers/webhook-handler.ts checks the signature
 * and hands the body in). Nothing to start: the route is always there and answers 404 for unknown names.
 */
export const webhookSource = defineSource({
  key: "webhook",
  pick: (on) => ("webhook" in on ? on.webhook : undefined),
  describe: (_on, trigger) => `POST /hooks/${trigger.name}`,
  start: () => () => {},
});

/** The secret a webhook trigger's sender signs with (`/hooks/<name>` checks it), or undefined for other sources. */
export function webhookSecret(on: TriggerSource): string | undefined {
  return "webhook" in on ? on.webhook.secret : undefined;
}
