import type { Logger } from "pino";
import type { McpServerConfig } from "../config/sections/mcp.js";
import type { ToolRegistry } from "../tools/registry.js";
import { McpConnection } from "./mcp-connection.js";
import type { McpServerStatus } from "./mcp-status.js";
import { toMagpieTools } from "./mcp-tools.js";

export interface McpManagerOptions {
  servers: Record<string, McpServerConfig>;
  tools: ToolRegistry;
  logger: Logger;
  workspace: string;
  /** First restart delay (default 1 s, doubling up to a minute). */
  backoffMs?: number;
}

/** Every enabled MCP server: started in the background, their tools kept in the registry as they change. */
export class McpManager {
  readonly connections = new Map<string, McpConnection>();
  private readonly offered = new Map<string, number>();

  constructor(private readonly options: McpManagerOptions) {
    for (const [name, config] of Object.entries(options.servers)) {
      if (!config.enabled) continue;
      const connection: McpConnection = new McpConnection({
        name,
        config,
        logger: options.logger,
        ...(options.backoffMs !== undefined ? { backoffMs: options.backoffMs } : {}),
        onTools: (listed) => {
          const tools = toMagpieTools(listed, { connection, config, workspace: options.workspace });
          const skipped = options.tools.replaceDynamic(`mcp:${name}`, tools);
          if (skipped.length > 0) options.logger.warn({ server: name, skipped }, "mcp-tool-name-taken");
          this.offered.set(name, tools.length - skipped.length);
        },
      });
      this.connections.set(name, connection);
    }
  }

  /** Starts every server without waiting for any. */
  start(): void {
    for (const connection of this.connections.values()) connection.start();
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.connections.values()].map((connection) => connection.stop()));
  }

  status(): McpServerStatus[] {
    const statuses: McpServerStatus[] = [];
    for (const [name, config] of Object.entries(this.options.servers)) {
      const connection = this.connections.get(name);
      statuses.push({
        name,
        transport: config.command ? "stdio" : "http",
        state: connection?.state ?? "disabled",
        tools: this.offered.get(name) ?? 0,
        listed: connection?.tools.length ?? 0,
        restarts: connection?.restarts ?? 0,
        lastError: connection?.lastError ?? null,
      });
    }
    return statuses;
  }
}
