import type { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import type { ToolContext } from "./context.js";

// Lives in the core so guards below the tools (security) can throw it; tools import it from here.
export { ToolError } from "../core/tool-error.js";

export type ToolRisk = "low" | "medium" | "high";

/** What a tool returns: text for the model, or a value serialized as JSON. */
export type ToolOutput = string | Record<string, unknown> | unknown[];

export interface Tool<Input = unknown> {
  name: string;
  description: string;
  inputSchema: z.ZodType<Input>;
  /**
   * The JSON Schema offered to the model as is (then cleaned per dialect), instead of `inputSchema`'s
   * conversion: tools whose schema comes from elsewhere (MCP servers), with `inputSchema` validating against it.
   */
  parameters?: Record<string, unknown>;
  risk: ToolRisk;
  /** An MCP server's tool: whether the server is `trusted` and the tool read-only (the rule of two reads it). */
  mcp?: { server: string; trusted: boolean; readOnly: boolean };
  /**
   * The tool only reads (DESIGN.md → Durable turns): a call of it that was running when the process died is run
   * again when its turn resumes; any other such call returns `tool.outcome_unknown` to the model instead.
   * Default false.
   */
  readOnly?: boolean;
  /** Decides per call instead of `readOnly` (http_request: GET is read-only, POST is not). */
  readOnlyFor?(input: Input): boolean;
  /** Conditional tools (http_request, hardware …) are offered only when this returns true. */
  isEnabled?(config: MagpieConfig): boolean;
  /**
   * A tool that starts another turn (delegate, spawn): the tools that turn would hold, so the rule of two judges
   * and shows the target's reach, not the caller's. Undefined: the caller's tools bound it.
   */
  startsTurnWith?(input: Input, context: ToolContext): readonly string[] | undefined;
  execute(input: Input, context: ToolContext): Promise<ToolOutput> | ToolOutput;
}

/** Declares a tool as data: name, description, zod input schema, risk and execute. */
export function defineTool<Schema extends z.ZodType>(tool: {
  name: string;
  description: string;
  inputSchema: Schema;
  risk: ToolRisk;
  readOnly?: boolean;
  readOnlyFor?(input: z.output<Schema>): boolean;
  isEnabled?(config: MagpieConfig): boolean;
  startsTurnWith?(input: z.output<Schema>, context: ToolContext): readonly string[] | undefined;
  execute(input: z.output<Schema>, context: ToolContext): Promise<ToolOutput> | ToolOutput;
}): Tool<z.output<Schema>> {
  return tool as unknown as Tool<z.output<Schema>>;
}

/**
 * The JSON text a failed call returns to the model. `refused` marks a call a rule refused (tool set, guard,
 * budget): the agent loop ends a turn that keeps making such calls.
 */
export function toolErrorText(code: string, message: string, refused = false): string {
  return JSON.stringify(
    refused ? { ok: false, refused, error: { code, message } } : { ok: false, error: { code, message } },
  );
}
