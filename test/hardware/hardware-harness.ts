import { parseConfig } from "../../src/config/load.js";
import type { ConfigInput, MagpieConfig } from "../../src/config/schema.js";
import type { ApprovalRequest } from "../../src/core/approvals.js";
import { type HardwarePorts, HardwareService } from "../../src/hardware/hardware-service.js";
import { silentLogger } from "../../src/log/logger.js";
import { Redactor } from "../../src/log/redact.js";
import { Store } from "../../src/store/index.js";
import { builtinTools } from "../../src/tools/index.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { ownerCallContext } from "../helpers/call-context.js";

const HARDWARE_TOOLS = new Set(["hardware_board_info", "gpio", "serial", "i2c", "spi", "hardware_memory"]);

export interface HardwareHarness {
  config: MagpieConfig;
  hardware: HardwareService;
  registry: ToolRegistry;
  approvalRequests: ApprovalRequest[];
  /** The hardware tools the registry offers for this config. */
  enabled(): string[];
  /** Calls a tool like the agent loop does; returns the parsed JSON result. */
  call(name: string, args: Record<string, unknown>, sessionKey?: string): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A registry with the hardware tools and a HardwareService over the given ports (twins in tests). */
export function hardwareHarness(
  hardware: NonNullable<ConfigInput["hardware"]>,
  ports: HardwarePorts,
  options: { require?: string[]; decide?: (request: ApprovalRequest) => "approved" | "denied" } = {},
): HardwareHarness {
  const config = parseConfig(
    {
      dataDir: "/tmp/magpie-hw-unused",
      hardware,
      security: { approvals: { require: options.require ?? [], timeoutSecs: 5 } },
    },
    { env: {}, cwd: "/tmp" },
  );
  const store = Store.open(":memory:");
  const service = new HardwareService(config.hardware, ports);
  const approvalRequests: ApprovalRequest[] = [];
  const registry = new ToolRegistry({
    config,
    logger: silentLogger(),
    services: { store, redactor: new Redactor(), hardware: service },
    approvals: {
      request: async (request) => {
        approvalRequests.push(request);
        return options.decide?.(request) ?? "approved";
      },
    },
  });
  registry.register(...builtinTools.filter((tool) => HARDWARE_TOOLS.has(tool.name)));
  let id = 0;
  const enabled = () => registry.enabledNames().filter((name) => HARDWARE_TOOLS.has(name));
  return {
    config,
    hardware: service,
    registry,
    approvalRequests,
    enabled,
    async call(name, args, sessionKey = "test:chat") {
      const text = await registry.execute(
        { id: `call-${++id}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
        enabled(),
        ownerCallContext({ channel: "test", chatId: "chat" }, { sessionKey }),
      );
      return JSON.parse(text) as Record<string, unknown>;
    },
    async close() {
      await service.close();
      store.close();
    },
  };
}

/** The error code of a failed call's result, or null. */
export function codeOf(result: Record<string, unknown>): string | null {
  return result.ok === false ? ((result.error as { code?: string })?.code ?? "unknown") : null;
}
