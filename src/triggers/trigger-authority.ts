import type { TriggerDefinition } from "./trigger.js";

/**
 * The tool behind each resource a trigger's source reads: a trigger made in chat may read a device, a pin or the
 * broker only if the turn that made it could have, through that tool (DESIGN.md → Security → "One guard per
 * resource" and "Jobs carry their creator's authority").
 */
const SOURCE_TOOLS = {
  serial: { tool: "serial", what: "a board's serial port" },
  gpio: { tool: "gpio", what: "a GPIO pin" },
  mqtt: { tool: "mqtt_publish", what: "the MQTT broker" },
} as const;

/** Why a trigger may not be made or run with its creator's authority (a rule ID and a sentence), or null. */
export function authorityRefusal(trigger: TriggerDefinition): { code: string; message: string } | null {
  const { identity, toolNames } = trigger.creator;
  if (identity.role === "guest")
    return {
      code: "trigger.guest_not_allowed",
      message: `only an owner can make triggers, and ${identity.userName ?? identity.userId} is a guest on ${identity.channel}`,
    };
  // Config triggers (no recorded tools) are the owners'.
  if (!toolNames) return null;
  const tools = toolNames.join(", ") || "none";
  if ("command" in trigger.do && !toolNames.includes("shell"))
    return {
      code: "trigger.tool_not_allowed",
      message: `a command trigger runs shell, and the turn that made it had no shell tool (its tools: ${tools}); use message or prompt instead`,
    };
  for (const [source, { tool, what }] of Object.entries(SOURCE_TOOLS)) {
    if (!(source in trigger.on) || toolNames.includes(tool)) continue;
    return {
      code: "trigger.tool_not_allowed",
      message: `a ${source} trigger reads ${what}, and the turn that made it had no ${tool} tool (its tools: ${tools})`,
    };
  }
  return null;
}
