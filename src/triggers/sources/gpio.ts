import { z } from "zod";
import type { PinEdge } from "../../hardware/gpio-service.js";
import { errorMessage } from "../../lib/errors.js";
import { defineSource, type TriggerSourceModule } from "../trigger-source.js";

/** `on: {gpio: …}`. */
export const gpioOn = z.strictObject({
  gpio: z.strictObject({
    /** A `hardware.pins` entry with an edge. */
    pin: z.string().min(1),
    /** Only these edges (default: every edge the pin reports). */
    edge: z.enum(["rising", "falling", "both"]).optional(),
  }),
});

/**
 * `on: {gpio: {pin, edge?}}`: debounced edges of a `hardware.pins` entry with an `edge`, through the hardware
 * service (its one guard: only declared pins of configured boards). `hardware.watch` runs as these too.
 */
export const gpioSource: TriggerSourceModule<"gpio", typeof gpioOn> = defineSource({
  key: "gpio",
  on: gpioOn,
  listensTo: "a GPIO pin edge",
  example: '{"gpio": {"pin", "edge"?}}',
  pick: (on) => ("gpio" in on ? on.gpio : undefined),
  reaches: { tool: "gpio", does: "reads a GPIO pin" },
  describe: (on) => `${on.pin}${on.edge ? ` ${on.edge}` : ""}`,
  problems(on, _trigger, context, at) {
    const pin = context.config.hardware.pins[on.pin];
    if (!pin) return [`${at}.pin: unknown pin "${on.pin}" (declare it in hardware.pins)`];
    if (!pin.edge) return [`${at}.pin: pin "${on.pin}" needs an \`edge\` in hardware.pins`];
    if (!context.hardware) return [`${at}: no hardware.boards are configured`];
    return [];
  },
  async start(on, trigger, context, emit) {
    const hardware = context.hardware;
    if (!hardware) return () => {};
    const wanted = on.edge ?? "both";
    const stop = hardware.gpio.onEdge((edge: PinEdge) => {
      if (edge.pin !== on.pin || (wanted !== "both" && wanted !== edge.edge)) return;
      emit({
        source: "gpio",
        pin: edge.pin,
        value: edge.value,
        edge: edge.edge,
        payload: { pin: edge.pin, value: edge.value, edge: edge.edge },
        at: edge.at.getTime(),
      });
    });
    await hardware.gpio.watch(on.pin).catch((error: unknown) => {
      // The box lacks the device or the permission: said loudly; the app still runs (doctor names the fix).
      context.logger.error(
        { trigger: trigger.name, pin: on.pin, error: errorMessage(error) },
        "trigger-gpio-watch-failed",
      );
    });
    return stop;
  },
});
