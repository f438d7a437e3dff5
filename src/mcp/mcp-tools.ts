import { createHash } from "node:crypto";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { z } from "zod";
import type { McpServerConfig } from "../config/sections/mcp.js";
import type { Tool } from "../tools/define-tool.js";
import type { McpConnection } from "./mcp-connection.js";
import { formatMcpResult } from "./mcp-result.js";

const MAX_NAME = 64;
const MAX_DESCRIPTION = 2_000;
const validators = new AjvJsonSchemaValidator();

/** `mcp__<server>__<tool>`, with characters providers reject replaced and long names shortened. */
export function mcpToolName(server: string, tool: string): string {
  const name = `mcp__${server}__${tool.replace(/[^a-zA-Z0-9_-]/g, "_")}`;
  if (name.length <= MAX_NAME) return name;
  const hash = createHash("sha256").update(tool).digest("hex").slice(0, 8);
  return `${name.slice(0, MAX_NAME - 9)}_${hash}`;
}

/** Whether `tools.allow`/`deny` lets a tool through (by the server's name or the full `mcp__` name). */
export function isOffered(config: McpServerConfig, tool: string, fullName: string): boolean {
  const named = (list: string[]) => list.includes(tool) || list.includes(fullName);
  if (named(config.tools.deny)) return false;
  return config.tools.allow ? named(config.tools.allow) : true;
}

export interface McpToolsOptions {
  connection: McpConnection;
  config: McpServerConfig;
  workspace: string;
}

/**
 * The Magpie tools for a server's `tools/list`: their JSON Schema offered as is (cleaned per dialect by the
 * registry) and validated on call with ajv, so invalid arguments never reach the server. Risk is high unless the
 * server marks a tool read-only.
 */
export function toMagpieTools(listed: McpTool[], options: McpToolsOptions): Tool[] {
  const { connection, config } = options;
  const tools: Tool[] = [];
  const taken = new Set<string>();
  for (const tool of listed) {
    let name = mcpToolName(connection.name, tool.name);
    if (!isOffered(config, tool.name, name)) continue;
    while (taken.has(name)) name = `${name.slice(0, MAX_NAME - 2)}_${taken.size % 10}`;
    taken.add(name);
    const schema = { ...tool.inputSchema, type: "object" } as Record<string, unknown>;
    const description = (tool.description ?? tool.title ?? tool.name).slice(0, MAX_DESCRIPTION);
    tools.push({
      name,
      description: `${description} (MCP server '${connection.name}')`,
      parameters: schema,
      inputSchema: validatingSchema(schema),
      risk: tool.annotations?.readOnlyHint === true ? "low" : "high",
      mcp: {
        server: connection.name,
        trusted: config.trusted,
        readOnly: tool.annotations?.readOnlyHint === true,
      },
      readOnly: tool.annotations?.readOnlyHint === true,
      execute: async (input, context) => {
        const result = await connection.callTool(tool.name, input as Record<string, unknown>, context.signal);
        return formatMcpResult(result, {
          server: connection.name,
          tool: tool.name,
          workspace: options.workspace,
        });
      },
    });
  }
  return tools;
}

/** A zod schema that accepts an object valid under `schema` (ajv), with ajv's errors as zod issues. */
function validatingSchema(schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  let validate: ((input: unknown) => { valid: boolean; errorMessage?: string | undefined }) | null;
  try {
    validate = validators.getValidator(schema as never);
  } catch {
    // A schema ajv can't compile is the server's problem: the server still validates its own input.
    validate = null;
  }
  return z.record(z.string(), z.unknown()).superRefine((input, context) => {
    const result = validate?.(input);
    if (result && !result.valid)
      context.addIssue({
        code: "custom",
        message: result.errorMessage ?? "does not match the tool's schema",
      });
  });
}
