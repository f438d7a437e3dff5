import { MagpieError } from "../lib/errors.js";
import type { TriggerService } from "../triggers/trigger-service.js";
import type { ToolContext } from "./context.js";
import { ToolError } from "./define-tool.js";

/** The trigger service the triggers feature registers as `services.triggers`. */
export function triggersOf(context: Pick<ToolContext, "services">): TriggerService {
  const triggers = context.services.triggers;
  if (!triggers)
    throw new ToolError("trigger.unavailable", "Triggers are not running in this Magpie; nothing was done.");
  return triggers;
}

/** Runs a trigger call, turning its errors (and config errors of the runtime) into tool errors. */
export async function triggerCall<T>(action: () => T | Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof MagpieError && !(error instanceof ToolError))
      throw new ToolError(error.code, error.message);
    throw error;
  }
}
