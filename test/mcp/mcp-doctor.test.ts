import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { CliEnv } from "../../src/cli/cli-env.js";
import { run as doctor } from "../../src/cli/commands/doctor.js";
import { Store } from "../../src/store/index.js";
import { testConfig } from "../helpers/harness.js";
import { everythingStdio } from "./mcp-helpers.js";

describe("magpie doctor and MCP servers", () => {
  it("starts each enabled server, counts its tools, and names the fix for one that fails", async () => {
    const config = testConfig({
      tools: { shell: { sandbox: "off" } },
      mcpServers: {
        every: everythingStdio(),
        broken: { command: "/nonexistent/mcp-server" },
        off: { ...everythingStdio(), enabled: false },
      },
    });
    const stdout = new PassThrough();
    let out = "";
    stdout.on("data", (chunk) => (out += chunk));
    const env: CliEnv = {
      loadConfig: () => config,
      openStore: (loaded) => Store.open(loaded.dataDir),
      stdout,
      stderr: new PassThrough(),
    };
    await doctor([], env);
    expect(out).toMatch(/^✓ mcp every: stdio, ready, \d+ tools$/m);
    expect(out).toMatch(/^✗ mcp broken: stdio: .* — fix: check mcpServers\.broken\.command/m);
    expect(out).toMatch(/^– mcp off: disabled$/m);
  }, 30_000);
});
