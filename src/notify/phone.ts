import type { MagpieConfig } from "../config/schema.js";
import { createNtfyNotifier } from "./ntfy.js";
import { createPushoverNotifier, type Notifier, NotifyError, type PhoneProvider } from "./pushover.js";

/**
 * Every phone provider the owner configured (Pushover, ntfy) behind one Notifier: an owner alert goes to each
 * of them; `only` narrows a send to the providers asked for (`deliver: {ntfy: true}`, the `pushover` tool).
 * It resolves when at least one provider took the notification, and rejects with the first error otherwise.
 */
export function createPhoneNotifier(
  notify: MagpieConfig["notify"],
  providers: Partial<Record<PhoneProvider, Notifier>> = {},
): Notifier {
  const all: Record<PhoneProvider, Notifier> = {
    pushover: providers.pushover ?? createPushoverNotifier(notify.pushover),
    ntfy: providers.ntfy ?? createNtfyNotifier(notify.ntfy),
  };
  const names = Object.keys(all) as PhoneProvider[];
  const configured = names.filter((name) => all[name].configured);
  return {
    configured: configured.length > 0,
    async send(message, only) {
      // Asked for by name, a provider is tried even unconfigured: its own error says what to set.
      const chosen = only ? names.filter((name) => only.includes(name)) : configured;
      if (chosen.length === 0) {
        throw new NotifyError(
          "notify.not_configured",
          "No phone notifications are configured — set notify.pushover (PUSHOVER_TOKEN, PUSHOVER_USER_KEY) or notify.ntfy (NTFY_URL, NTFY_TOPIC).",
        );
      }
      const results = await Promise.allSettled(chosen.map((name) => all[name].send(message)));
      // One provider answers with its own id; several say whose id is whose.
      const sent = results.flatMap((result, index) =>
        result.status !== "fulfilled"
          ? []
          : chosen.length === 1
            ? [result.value]
            : [`${chosen[index]}:${result.value}`],
      );
      if (sent.length > 0) return sent.join(", ");
      throw (results[0] as PromiseRejectedResult).reason;
    },
  };
}
