import { isDeepStrictEqual } from "node:util";
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

/** What a reload did to the servers, by name. */
export interface McpReloadResult {
  started: string[];
  stopped: string[];
  restarted: string[];
}

/** Every enabled MCP server: started in the background, their tools kept in the registry as they change. */
export class McpManager {
  readonly connections = new Map<string, McpConnection>();
  private readonly offered = new Map<string, number>();
  private servers: Record<string, McpServerConfig>;
  private started = false;

  constructor(private readonly options: McpManagerOptions) {
    this.servers = options.servers;
    for (const [name, config] of Object.entries(options.servers)) {
      if (config.enabled) this.connections.set(name, this.connect(name, config));
    }
  }

  /** Starts every server without waiting for any. */
  start(): void {
    this.started = true;
    for (const connection of this.connections.values()) connection.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    await Promise.allSettled([...this.connections.values()].map((connection) => connection.stop()));
  }

  /**
   * Takes over a reloaded `mcpServers`: a new (or newly enabled) server starts, a removed (or disabled) one stops and
   * its tools leave the registry, a changed one is restarted with its new settings; the others keep running. A call
   * in flight on a server that stops ends with a clear error, never a hang.
   */
  async reload(servers: Record<string, McpServerConfig>): Promise<McpReloadResult> {
    const result: McpReloadResult = { started: [], stopped: [], restarted: [] };
    const previous = this.servers;
    this.servers = servers;
    const stopping: Promise<void>[] = [];
    for (const [name, connection] of this.connections) {
      const next = servers[name];
      if (next?.enabled && isDeepStrictEqual(previous[name], next)) continue;
      const restarting = next?.enabled === true;
      this.connections.delete(name);
      this.options.tools.replaceDynamic(`mcp:${name}`, []);
      this.offered.delete(name);
      stopping.push(
        connection.retire(
          restarting
            ? `was restarted by a config reload (mcpServers.${name} changed); try the call again`
            : `was ${next ? "disabled" : "removed"} by a config reload (mcpServers.${name}); its tools are gone`,
        ),
      );
      (restarting ? result.restarted : result.stopped).push(name);
    }
    // The old process is gone before its successor starts (a server that holds a port or a lock file).
    await Promise.allSettled(stopping);
    for (const [name, config] of Object.entries(servers)) {
      if (!config.enabled || this.connections.has(name)) continue;
      const connection = this.connect(name, config);
      this.connections.set(name, connection);
      if (this.started) connection.start();
      if (!result.restarted.includes(name)) result.started.push(name);
    }
    return result;
  }

  status(): McpServerStatus[] {
    const statuses: McpServerStatus[] = [];
    for (const [name, config] of Object.entries(this.servers)) {
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

  private connect(name: string, config: McpServerConfig): McpConnection {
    const { options } = this;
    const connection: McpConnection = new McpConnection({
      name,
      config,
      logger: options.logger,
      ...(options.backoffMs !== undefined ? { backoffMs: options.backoffMs } : {}),
      onTools: (listed) => {
        // A connection replaced by a reload may still answer a late tools/list: its tools are not offered again.
        if (this.connections.get(name) !== connection) return;
        const tools = toMagpieTools(listed, { connection, config, workspace: options.workspace });
        const skipped = options.tools.replaceDynamic(`mcp:${name}`, tools);
        if (skipped.length > 0) options.logger.warn({ server: name, skipped }, "mcp-tool-name-taken");
        this.offered.set(name, tools.length - skipped.length);
      },
    });
    return connection;
  }
}
