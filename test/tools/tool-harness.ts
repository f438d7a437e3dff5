import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "../../src/config/load.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import type { ApprovalGate, ApprovalRequest } from "../../src/core/approvals.js";
import type { ToolCallContext } from "../../src/core/tool-runtime.js";
import { silentLogger } from "../../src/log/logger.js";
import { Redactor } from "../../src/log/redact.js";
import { Store } from "../../src/store/index.js";
import type { ToolServices } from "../../src/tools/context.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { builtinTools } from "../../src/tools/index.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { ownerCallContext } from "../helpers/call-context.js";

/** The tools under test here (other features' tools need services this harness doesn't build). */
const OWN_TOOLS = new Set([
  "spill_read",
  "file_read",
  "file_write",
  "file_edit",
  "file_append",
  "file_list",
  "file_find",
  "file_grep",
  "apply_patch",
  "image_info",
  "shell",
  "git_operations",
  "http_request",
  "web_fetch",
  "web_search",
]);

export interface HarnessOptions {
  level?: "low" | "medium" | "high";
  require?: string[];
  /** Decides approval requests; default approves everything. */
  decide?: (request: ApprovalRequest) => "approved" | "denied" | "timeout";
  tools?: Record<string, unknown>;
  services?: Partial<ToolServices>;
  redactor?: Redactor;
  /** Leave `security.approvals.require` at its real default (`["guard:warn"]`) instead of `require`'s `[]`. */
  defaultApprovals?: boolean;
  /**
   * The config file and `.env` files Magpie "loaded" (they become Magpie's state for `file.magpie_state`);
   * relative paths are taken from the harness root. The files themselves are the test's to write.
   */
  sourcePath?: string;
  envFiles?: string[];
  /** Overrides of the call context (a job's turn: `{ origin: "schedule", canAsk: false }`). */
  callContext?: Partial<ToolCallContext>;
}

export interface ToolHarness {
  root: string;
  workspace: string;
  home: string;
  outside: string;
  config: MagpieConfig;
  store: Store;
  registry: ToolRegistry;
  approvalRequests: ApprovalRequest[];
  /** Runs a tool through the registry (validation, approvals, redaction, audit) like the agent loop does. */
  call(name: string, args: Record<string, unknown>, sessionKey?: string): Promise<string>;
  cleanup(): Promise<void>;
}

/** The error code of a failed call's JSON text, or null for a success. */
export function errorCode(text: string): string | null {
  try {
    const parsed = JSON.parse(text) as { ok?: boolean; error?: { code?: string } };
    return parsed.ok === false ? (parsed.error?.code ?? "unknown") : null;
  } catch {
    return null;
  }
}

/** A temp root with workspace/, home/ (stands in for ~) and outside/ plus a registry holding every built-in tool. */
export async function createToolHarness(options: HarnessOptions = {}): Promise<ToolHarness> {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "magpie-tools-")));
  const workspace = path.join(root, "workspace");
  const home = path.join(root, "home");
  const outside = path.join(root, "outside");
  await Promise.all([workspace, home, outside].map((dir) => fs.mkdir(dir, { recursive: true })));
  const config = parseConfig(
    {
      dataDir: path.join(root, "data"),
      workspace,
      security: {
        level: options.level ?? "medium",
        approvals: options.defaultApprovals
          ? { timeoutSecs: 5 }
          : { require: options.require ?? [], timeoutSecs: 5 },
      },
      tools: options.tools ?? {},
    },
    {
      env: {},
      cwd: root,
      sourcePath: options.sourcePath ? path.resolve(root, options.sourcePath) : null,
      envFiles: (options.envFiles ?? []).map((file) => path.resolve(root, file)),
    },
  );
  const store = Store.open(":memory:");
  const approvalRequests: ApprovalRequest[] = [];
  const gate: ApprovalGate = {
    request: async (request) => {
      approvalRequests.push(request);
      return options.decide?.(request) ?? "approved";
    },
  };
  const registry = new ToolRegistry({
    config,
    logger: silentLogger(),
    services: { store, redactor: options.redactor ?? new Redactor(), homeDir: home, ...options.services },
    approvals: gate,
  });
  registry.register(...(builtinTools.filter((tool) => OWN_TOOLS.has(tool.name)) as Tool[]));
  const names = registry.enabledNames();
  let callId = 0;
  return {
    root,
    workspace,
    home,
    outside,
    config,
    store,
    registry,
    approvalRequests,
    call: (name, args, sessionKey = "test:chat") =>
      registry.execute(
        { id: `call-${++callId}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
        names,
        {
          ...ownerCallContext({ channel: "test", chatId: "chat" }, { sessionKey }),
          ...options.callContext,
        },
      ),
    cleanup: async () => {
      store.close();
      await fs.rm(root, { recursive: true, force: true });
    },
  };
}
