import type { SlashCommand } from "../core/commands.js";
import type { TriggerService, TriggerView } from "./trigger-service.js";

/** One trigger's lines in `/triggers`. */
function formatTrigger(view: TriggerView): string {
  const { fired, filtered, errors, dropped } = view.counts;
  return [
    `• ${view.name}${view.enabled ? "" : " (disabled)"} — ${view.on} → ${view.do} → ${view.deliver || "nowhere"}`,
    view.when ? `  when ${view.when}` : null,
    `  fired ${fired}, filtered out ${filtered}, errors ${errors}, dropped ${dropped}`,
  ]
    .filter((line) => line !== null)
    .join("\n");
}

/** `/triggers`: every trigger with its counts since start (fired, filtered out, errors, dropped). */
export function triggersCommand(triggers: TriggerService): SlashCommand {
  return {
    name: "triggers",
    description: "List event triggers with their counts",
    ownerOnly: true,
    run() {
      const views = triggers.list();
      if (views.length === 0)
        return "No triggers. Add them under `triggers:` in the config, or ask me to make one.";
      return `Triggers (counts since start):\n${views.map(formatTrigger).join("\n")}`;
    },
  };
}
