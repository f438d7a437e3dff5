import { authorityRefusal, type NeededTool, SHELL_TOOL } from "../scheduler/action-runner.js";
import { sourceOf } from "./sources/index.js";
import type { TriggerDefinition } from "./trigger.js";

/**
 * The tools a trigger's source reaches (its action's own, shell, is the runner's to add): a trigger made in chat
 * may read a device, a pin or the broker only if the turn that made it could have, through that tool (DESIGN.md →
 * Security → "One guard per resource" and "Jobs carry their creator's authority"). Each source names its own
 * (`reaches` in src/triggers/sources/<key>.ts).
 */
export function sourceTools(trigger: Pick<TriggerDefinition, "on">): NeededTool[] {
  const reaches = sourceOf(trigger.on).reaches;
  return reaches ? [reaches] : [];
}

/**
 * Why a trigger may not be made with its creator's authority (a rule ID and a sentence), or null: the action
 * runner's one rule (src/scheduler/action-runner.ts), worded for trigger_add and the runtime's problems.
 */
export function creationRefusal(trigger: TriggerDefinition): { code: string; message: string } | null {
  const needed = [...("command" in trigger.do ? [SHELL_TOOL] : []), ...sourceTools(trigger)];
  const refusal = authorityRefusal(trigger.creator, needed);
  if (!refusal) return null;
  const { identity } = trigger.creator;
  if (refusal.rule === "guest_not_allowed")
    return {
      code: "trigger.guest_not_allowed",
      message: `only an owner can make triggers, and ${identity.userName ?? identity.userId} is a guest on ${identity.channel}`,
    };
  const source = sourceOf(trigger.on).key;
  return {
    code: "trigger.tool_not_allowed",
    message:
      refusal.tool === "shell"
        ? `a command trigger runs shell, and the turn that made it had no shell tool (its tools: ${refusal.tools}); use message or prompt instead`
        : `a ${source} trigger ${refusal.does}, and the turn that made it had no ${refusal.tool} tool (its tools: ${refusal.tools})`,
  };
}
