import type { HardwareConfig } from "../config/sections/hardware.js";
import { ownerIdentity } from "../core/identity.js";
import type { PinEdge } from "../hardware/gpio-service.js";
import { edgeText, type HardwareEvent } from "../hardware/watch-events.js";
import type { ActionRunner, ActionSource } from "../scheduler/action-runner.js";
import type { TriggerDefinition, TriggerEvent, TriggerResult, WatchAction, WatchTarget } from "./trigger.js";
import type { FiringContext } from "./trigger-engine.js";

/** Watch triggers are named `hardware.watch.<pin>`: a dot, which config and chat trigger names can't have. */
const WATCH_PREFIX = "hardware.watch.";

/**
 * `hardware.watch` as gpio triggers (DESIGN.md → Hardware, → Layout → Composition): the watches of one pin
 * become one trigger on that pin — every edge the pin reports (`hardware.pins.<pin>.edge`, debounced there),
 * owned by the owners, limited to the smallest `maxPerMinute` among them — whose action reports the edge to
 * each watch's `notify` through the one action runner. Made at load; the config keeps its `hardware.watch` form.
 */
export function watchTriggers(hardware: Pick<HardwareConfig, "watch">): TriggerDefinition[] {
  const byPin = new Map<string, HardwareConfig["watch"]>();
  for (const watch of hardware.watch) byPin.set(watch.pin, [...(byPin.get(watch.pin) ?? []), watch]);
  return [...byPin].map(([pin, watches]) => {
    const targets = watches.map((watch): WatchTarget => {
      const { channel, chat_id: chatId, pushover } = watch.notify;
      const chat = channel !== undefined && chatId !== undefined ? { channel, chatId: String(chatId) } : null;
      return {
        ...(chat ? { chat } : {}),
        pushover,
        ...(chat && watch.prompt ? { prompt: watch.prompt } : {}),
      };
    });
    const maxPerMinute = Math.min(...watches.map((watch) => watch.maxPerMinute));
    return {
      name: `${WATCH_PREFIX}${pin}`,
      on: { gpio: { pin } },
      do: { watch: { pin, targets } },
      deliver: { pushover: false },
      cooldownSecs: 0,
      maxPerHour: maxPerMinute * 60,
      maxPerMinute,
      enabled: true,
      source: "config",
      creator: { identity: ownerIdentity("local") },
    };
  });
}

/** The watch action of a trigger made from `hardware.watch`, or null. */
export function watchActionOf(trigger: TriggerDefinition): WatchAction["watch"] | null {
  return "watch" in trigger.do ? trigger.do.watch : null;
}

/** A watch as the action runner names it: `hardware:<pin>` (a Pushover title says `Magpie: <pin>`). */
function watchSource(pin: string): ActionSource {
  return { kind: "hardware", id: pin, label: `hardware.watch of ${pin}`, origin: "event" };
}

/** The edge a gpio event reports. */
function edgeOf(event: TriggerEvent, pin: string): PinEdge {
  return { pin, edge: event.edge ?? "rising", value: event.value === 1 ? 1 : 0, at: new Date(event.at) };
}

/**
 * Reports a fired watch trigger's edge to each target through the one runner: a chat message (its chat comes from
 * the owner's file and is not judged again), or with a prompt an event note whose follow-up turn answers there;
 * Pushover when asked. One target failing does not keep the edge from the others; the failure is thrown after.
 */
export async function runWatch(
  runner: ActionRunner,
  watch: WatchAction["watch"],
  event: TriggerEvent,
  context: FiringContext,
): Promise<void> {
  const from = watchSource(watch.pin);
  const text = edgeText(edgeOf(event, watch.pin), context.dropped);
  const sends = watch.targets.flatMap(({ chat, pushover, prompt }) => [
    ...(chat
      ? [
          runner.deliver(
            from,
            {
              chat,
              recheck: false,
              ...(prompt
                ? {
                    followUp: {
                      request: prompt,
                      sender: { channel: chat.channel, userId: chat.chatId, role: "owner" as const },
                    },
                  }
                : {}),
            },
            text,
          ),
        ]
      : []),
    ...(pushover ? [runner.deliver(from, { pushover: true }, text)] : []),
  ]);
  const failed = (await Promise.allSettled(sends)).find((result) => result.status === "rejected");
  if (failed) throw failed.reason;
}

/** What the pin event log records of a watch trigger's judged edge (null for other triggers and results). */
export function watchRecord(
  trigger: TriggerDefinition,
  event: TriggerEvent,
  result: TriggerResult,
): { edge: PinEdge; delivered: HardwareEvent["delivered"] } | null {
  const watch = watchActionOf(trigger);
  if (!watch || (result !== "fired" && result !== "dropped")) return null;
  const delivered =
    result === "dropped"
      ? ["suppressed"]
      : watch.targets.flatMap(({ chat, pushover, prompt }) => [
          ...(chat ? [prompt ? "turn" : "chat"] : []),
          ...(pushover ? ["pushover"] : []),
        ]);
  return { edge: edgeOf(event, watch.pin), delivered };
}
