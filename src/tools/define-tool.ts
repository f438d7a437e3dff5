import type { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import { MagpieError } from "../core/errors.js";
import type { ToolContext } from "./context.js";

export type ToolRisk = "low" | "medium" | "high";

/** What a tool returns: text for the model, or a value serialized as JSON. */
export type ToolOutput = string | Record<string, unknown> | unknown[];

export interface Tool<Input = unknown> {
  name: string;
  description: string;
  inputSchema: z.ZodType<Input>;
  risk: ToolRisk;
  /** Conditional tools (http_request, hardware …) are offered only when this returns true. */
  isEnabled?(config: MagpieConfig): boolean;
  execute(input: Input, context: ToolContext): Promise<ToolOutput> | ToolOutput;
}

/** Declares a tool as data: name, description, zod input schema, risk and execute. */
export function defineTool<Schema extends z.ZodType>(tool: {
  name: string;
  description: string;
  inputSchema: Schema;
  risk: ToolRisk;
  isEnabled?(config: MagpieConfig): boolean;
  execute(input: z.output<Schema>, context: ToolContext): Promise<ToolOutput> | ToolOutput;
}): Tool<z.output<Schema>> {
  return tool as unknown as Tool<z.output<Schema>>;
}

/**
 * A failure the model can act on. `code` is a rule ID for guard refusals (`file.system_path_read`,
 * `ssrf.private_address`) or a short error code; it reaches the model as `{"ok":false,"error":{code,message}}`.
 */
export class ToolError extends MagpieError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "ToolError";
  }
}

/** The JSON text a failed call returns to the model. */
export function toolErrorText(code: string, message: string): string {
  return JSON.stringify({ ok: false, error: { code, message } });
}
