/** Where an MCP server is in its life: `ready` serves calls; the others answer "server unavailable". */
export type McpServerState = "starting" | "ready" | "restarting" | "stopped" | "disabled";

/** One server as `/mcp` and `magpie doctor` show it. */
export interface McpServerStatus {
  name: string;
  transport: "stdio" | "http";
  state: McpServerState;
  /** Tools offered to the model (after `tools.allow`/`deny`). */
  tools: number;
  /** Tools the server lists. */
  listed: number;
  restarts: number;
  lastError: string | null;
}

/** One line per server: `name (stdio): ready, 3 tools`. */
export function describeMcpStatus(status: McpServerStatus): string {
  const tools =
    status.listed === status.tools
      ? `${status.tools} tool${status.tools === 1 ? "" : "s"}`
      : `${status.tools} of ${status.listed} tools offered`;
  const restarts = status.restarts > 0 ? `, restarted ${status.restarts}×` : "";
  const error = status.lastError && status.state !== "ready" ? ` — ${status.lastError}` : "";
  return `${status.name} (${status.transport}): ${status.state}, ${tools}${restarts}${error}`;
}
