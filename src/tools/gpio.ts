import { z } from "zod";
import { anyBoardCan } from "../hardware/boards.js";
import { defineTool, ToolError } from "./define-tool.js";
import { deviceError, hardwareOf, requireHighRisk } from "./hardware-support.js";

export const gpioTool = defineTool({
  name: "gpio",
  description:
    "GPIO pins declared in hardware.pins (by name): list them (with recent events), read one, write 0/1 to an `out` pin, watch/unwatch a pin with an edge (its changes then arrive in this chat as events). Values are logical (active-low already applied).",
  inputSchema: z.object({
    action: z.enum(["list", "read", "write", "watch", "unwatch"]),
    pin: z.string().min(1).optional().describe("Pin name from hardware.pins (not a number)."),
    value: z
      .union([z.literal(0), z.literal(1)])
      .optional()
      .describe("write: 0 or 1."),
  }),
  risk: "medium",
  isEnabled: (config) => anyBoardCan(config.hardware.boards, "gpio"),
  async execute(input, context) {
    const hardware = hardwareOf(context);
    const { gpio } = hardware;
    if (input.action === "list")
      return { pins: gpio.list(), recentEvents: hardware.events?.events().slice(-10) ?? [] };
    const pin = input.pin;
    if (!pin)
      throw new ToolError(
        "gpio.pin_required",
        `Action "${input.action}" needs \`pin\` (a name from hardware.pins).`,
      );
    try {
      switch (input.action) {
        case "read":
          return { pin, value: await gpio.read(pin) };
        case "write": {
          if (input.value === undefined)
            throw new ToolError("gpio.value_required", "write needs `value`: 0 or 1.");
          gpio.checkWritable(pin); // an unknown or input pin fails before an approval is asked for
          await requireHighRisk(context, `gpio write ${pin} = ${input.value}`);
          await gpio.write(pin, input.value);
          return { pin, value: input.value, written: true };
        }
        case "watch": {
          if (!hardware.events) throw new ToolError("gpio.no_events", "Pin events are not running here.");
          await gpio.watch(pin);
          hardware.events.watchFor(pin, {
            sessionKey: context.sessionKey,
            target: context.target,
            sender: context.sender,
          });
          return {
            pin,
            watching: true,
            note: "Edges of this pin will arrive in this chat as events (rate-limited).",
          };
        }
        case "unwatch":
          return {
            pin,
            watching: false,
            wasWatching: hardware.events?.unwatchFor(pin, context.sessionKey) ?? false,
          };
      }
    } catch (error) {
      throw deviceError(error, "gpio.failed", `gpio ${input.action} ${pin}`);
    }
  },
});
