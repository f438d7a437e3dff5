import type { SlashCommand } from "../core/commands.js";
import { describeMcpStatus, type McpServerStatus } from "./mcp-status.js";

/** `/mcp`: each configured MCP server with its state and tool count. */
export function mcpCommand(statuses: () => McpServerStatus[]): SlashCommand {
  return {
    name: "mcp",
    description: "MCP servers: state and tools",
    run() {
      const list = statuses();
      if (list.length === 0) return "No MCP servers are configured (mcpServers in the config).";
      return ["MCP servers:", ...list.map((status) => `• ${describeMcpStatus(status)}`)].join("\n");
    },
  };
}
