import { ToolError } from "../core/tool-error.js";
import type { HardwareService } from "../hardware/hardware-service.js";
import { errorCode, errorMessage } from "../lib/errors.js";
import type { ToolContext } from "./context.js";

/** The hardware service, or a ToolError when the feature isn't running. */
export function hardwareOf(context: ToolContext): HardwareService {
  const hardware = context.services.hardware;
  if (!hardware)
    throw new ToolError(
      "hardware.not_configured",
      "Hardware is not set up here (configure hardware.boards).",
    );
  return hardware;
}

/** Parses 0x-hex or decimal (numbers pass through). */
export function parseNumber(value: number | string, field: string): number {
  if (typeof value === "number") return value;
  const text = value.trim();
  const parsed = /^0x[0-9a-f]+$/i.test(text)
    ? Number.parseInt(text, 16)
    : /^\d+$/.test(text)
      ? Number(text)
      : Number.NaN;
  if (!Number.isSafeInteger(parsed))
    throw new ToolError(
      "hardware.invalid_number",
      `${field} must be a number like 72 or "0x48" (got ${JSON.stringify(value)}).`,
    );
  return parsed;
}

/** A device failure as a ToolError the model can read, keeping ToolErrors as they are. */
export function deviceError(error: unknown, code: string, what: string): ToolError {
  if (error instanceof ToolError) return error;
  const errno = errorCode(error);
  return new ToolError(code, `${what} failed${errno ? ` (${errno})` : ""}: ${errorMessage(error)}`);
}

/** Asks for approval as a `risk: high` action (writes), whatever the tool's own risk. */
export async function requireHighRisk(context: ToolContext, action: string): Promise<void> {
  const decision = await context.requireApproval(action, "risk:high");
  if (decision === "approved") return;
  throw new ToolError(
    decision === "timeout" ? "approval.timeout" : "approval.denied",
    decision === "timeout"
      ? `The owner did not approve "${action}" in time; nothing was written.`
      : `The owner denied "${action}"; nothing was written.`,
  );
}
