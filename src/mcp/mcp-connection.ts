import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { McpServerConfig } from "../config/sections/mcp.js";
import { errorMessage } from "../lib/errors.js";
import { ToolError } from "../tools/define-tool.js";
import type { McpServerState } from "./mcp-status.js";

export interface McpConnectionOptions {
  name: string;
  config: McpServerConfig;
  logger: Logger;
  /** Called with the server's tools after each discovery (connect, `notifications/tools/list_changed`). */
  onTools?(tools: McpTool[]): void;
  /** First restart delay; doubles per failed attempt up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** How long connecting and `tools/list` may take. */
  connectTimeoutMs?: number;
}

const VERSION = "1.0.0";
const STDERR_LINES = 20;

/**
 * One MCP server: connects (stdio or streamable HTTP), discovers its tools, calls them, and reconnects with
 * back-off when the server exits or a connection fails. Calls while it is down answer "server unavailable".
 */
export class McpConnection {
  state: McpServerState = "stopped";
  tools: McpTool[] = [];
  lastError: string | null = null;
  restarts = 0;
  private client: Client | null = null;
  private transport: Transport | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private stopped = true;
  /** Why a config reload took this connection out of service (then every call says so). */
  private retired: string | null = null;
  private readonly stderrTail: string[] = [];

  constructor(private readonly options: McpConnectionOptions) {}

  get name(): string {
    return this.options.name;
  }

  get transportKind(): "stdio" | "http" {
    return this.options.config.command ? "stdio" : "http";
  }

  /** The stdio server's process id (null for HTTP or while down). */
  get pid(): number | null {
    return this.transport instanceof StdioClientTransport ? this.transport.pid : null;
  }

  /** Connects in the background; never throws (failures are retried with back-off). */
  start(): void {
    this.stopped = false;
    void this.connect();
  }

  /** Connects once and resolves when the tools are known (or rejects): `magpie doctor`. */
  async connectOnce(): Promise<McpTool[]> {
    this.stopped = false;
    await this.open();
    return this.tools;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.state = "stopped";
    const client = this.client;
    this.client = null;
    this.transport = null;
    if (client) await client.close().catch(() => {});
  }

  /**
   * Takes the connection out of service for good (a config reload removed, disabled or replaced the server): calls
   * in flight end with `mcp.removed` carrying `reason`, and so does every later call through a stale tool.
   */
  async retire(reason: string): Promise<void> {
    this.retired = reason;
    await this.stop();
  }

  /** Calls one tool; a server that is down answers `mcp.unavailable` (the model can try again later). */
  async callTool(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    if (this.retired) throw this.removed();
    const client = this.client;
    if (!client || this.state !== "ready") throw this.unavailable();
    const timeoutMs = this.options.config.timeoutSecs * 1000;
    try {
      return (await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: timeoutMs,
      })) as CallToolResult;
    } catch (error) {
      if (signal.aborted) throw error;
      // Closing the client rejects the calls still waiting on it: they say why, at once.
      if (this.retired) throw this.removed();
      const message = errorMessage(error);
      if (/timed? ?out/i.test(message))
        throw new ToolError(
          "mcp.timeout",
          `MCP tool '${tool}' on server '${this.name}' timed out after ${timeoutMs} ms (mcpServers.${this.name}.timeoutSecs).`,
        );
      if (this.state !== "ready") throw this.unavailable();
      throw new ToolError(
        "mcp.call_failed",
        `MCP server '${this.name}' failed the call to '${tool}': ${message}`,
      );
    }
  }

  private removed(): ToolError {
    return new ToolError("mcp.removed", `MCP server '${this.name}' ${this.retired}.`);
  }

  private unavailable(): ToolError {
    const why = this.lastError ? ` (last error: ${this.lastError})` : "";
    return new ToolError(
      "mcp.unavailable",
      `MCP server '${this.name}' is unavailable right now (${this.state})${why}; it is being restarted. Try again later or do without it.`,
    );
  }

  private async connect(): Promise<void> {
    try {
      await this.open();
      this.failures = 0;
    } catch (error) {
      if (this.stopped) return;
      this.lastError = errorMessage(error);
      this.options.logger.warn({ server: this.name, err: this.lastError }, "mcp-server-failed");
      await this.closeQuietly();
      this.scheduleRestart();
    }
  }

  private async open(): Promise<void> {
    this.state = this.restarts > 0 || this.failures > 0 ? "restarting" : "starting";
    const transport = this.createTransport();
    const client = new Client(
      { name: "magpie", version: VERSION },
      {
        capabilities: {},
        listChanged: {
          tools: {
            autoRefresh: false,
            debounceMs: 100,
            onChanged: () => void this.refreshTools(client),
          },
        },
      },
    );
    this.client = client;
    this.transport = transport;
    client.onclose = () => this.onClosed(client);
    client.onerror = (error) =>
      this.options.logger.debug({ server: this.name, err: errorMessage(error) }, "mcp-transport-error");
    const timeout = this.options.connectTimeoutMs ?? 30_000;
    await client.connect(transport, { timeout });
    await this.refreshTools(client, true);
    if (this.client !== client) return;
    this.state = "ready";
    this.lastError = null;
    this.options.logger.info({ server: this.name, tools: this.tools.length }, "mcp-server-ready");
  }

  /** `tools/list`, every page. */
  private async refreshTools(client: Client, throwOnError = false): Promise<void> {
    try {
      const tools: McpTool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, {
          timeout: this.options.connectTimeoutMs ?? 30_000,
        });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      if (this.client !== client) return;
      this.tools = tools;
      this.options.onTools?.(tools);
    } catch (error) {
      if (throwOnError) throw error;
      this.options.logger.warn({ server: this.name, err: errorMessage(error) }, "mcp-tools-list-failed");
    }
  }

  private onClosed(client: Client): void {
    if (this.client !== client || this.stopped) return;
    const tail = this.stderrTail.slice(-3).join(" | ");
    this.lastError = `the server closed the connection${tail ? `: ${tail}` : ""}`;
    this.options.logger.warn({ server: this.name, err: this.lastError }, "mcp-server-exited");
    this.client = null;
    this.transport = null;
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.stopped || this.retryTimer) return;
    this.state = "restarting";
    const base = this.options.backoffMs ?? 1_000;
    const delay = Math.min(base * 2 ** this.failures, this.options.maxBackoffMs ?? 60_000);
    this.failures += 1;
    this.restarts += 1;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.stopped) void this.connect();
    }, delay);
    this.retryTimer.unref?.();
  }

  private async closeQuietly(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.transport = null;
    if (client) await client.close().catch(() => {});
  }

  private createTransport(): Transport {
    const { config } = this.options;
    if (config.url) {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
      });
    }
    // The SDK adds only its safe defaults (PATH, HOME, USER, SHELL, TERM, LOGNAME) to `env`: none of Magpie's.
    const transport = new StdioClientTransport({
      command: config.command as string,
      args: config.args,
      env: config.env,
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) {
        const trimmed = line.trim();
        if (!trimmed) continue;
        this.stderrTail.push(trimmed.slice(0, 300));
        if (this.stderrTail.length > STDERR_LINES) this.stderrTail.shift();
        this.options.logger.debug({ server: this.name, line: trimmed.slice(0, 300) }, "mcp-server-stderr");
      }
    });
    return transport;
  }
}
