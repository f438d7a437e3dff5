import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "../../src/config/load.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import type { ApprovalRequest } from "../../src/core/approvals.js";
import { silentLogger } from "../../src/log/logger.js";
import { Redactor } from "../../src/log/redact.js";
import { Store } from "../../src/store/index.js";
import type { ToolServices } from "../../src/tools/context.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { ownerCallContext } from "../helpers/call-context.js";

export interface RegistryHarness {
  root: string;
  workspace: string;
  config: MagpieConfig;
  approvalRequests: ApprovalRequest[];
  call(name: string, args: Record<string, unknown>, sessionKey?: string): Promise<string>;
  cleanup(): Promise<void>;
}

/** A registry holding `tools` under a config built from `raw` (workspace and dataDir in a temp root). */
export async function createRegistryHarness(
  tools: Tool[],
  raw: Record<string, unknown>,
  options: { services?: Partial<ToolServices>; redactor?: Redactor; env?: NodeJS.ProcessEnv } = {},
): Promise<RegistryHarness> {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "magpie-browser-")));
  const workspace = path.join(root, "workspace");
  await fs.mkdir(workspace, { recursive: true });
  const config = parseConfig(
    { dataDir: path.join(root, "data"), workspace, ...raw },
    { env: options.env ?? {}, cwd: root, sourcePath: null, envFiles: [] },
  );
  const store = Store.open(":memory:");
  const approvalRequests: ApprovalRequest[] = [];
  const registry = new ToolRegistry({
    config,
    logger: silentLogger(),
    services: { store, redactor: options.redactor ?? new Redactor(), homeDir: root, ...options.services },
    approvals: {
      request: async (request) => {
        approvalRequests.push(request);
        return "approved";
      },
    },
  });
  registry.register(...tools);
  let callId = 0;
  return {
    root,
    workspace,
    config,
    approvalRequests,
    call: (name, args, sessionKey = "test:chat") =>
      registry.execute(
        { id: `call-${++callId}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
        registry.enabledNames(),
        ownerCallContext({ channel: "test", chatId: "chat" }, { sessionKey }),
      ),
    cleanup: async () => {
      store.close();
      await fs.rm(root, { recursive: true, force: true });
    },
  };
}
