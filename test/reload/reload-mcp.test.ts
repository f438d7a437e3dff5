import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { mcpFeature, mcpManager, mcpTiming } from "../../src/app/mcp-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { startTestApp, type TestApp, testConfig } from "../helpers/harness.js";
import { everythingStdio, waitFor, waitForTool } from "../mcp/mcp-helpers.js";

/** `mcpServers` reloaded into a running Magpie with the real reference server from npm (server-everything). */

let running: TestApp | null = null;
beforeAll(() => {
  mcpTiming.backoffMs = 200;
});
afterAll(() => {
  mcpTiming.backoffMs = 1_000;
});
afterEach(async () => {
  await running?.stop();
  running = null;
});

const reload = (app: TestApp, mcpServers: NonNullable<ConfigInput["mcpServers"]>) =>
  app.app.reload(testConfig({ mcpServers }, app.dataDir, {}));

function call(app: TestApp, tool: string, args: Record<string, unknown>, id = "c1"): Promise<string> {
  return app.app.tools.execute(
    { id, type: "function", function: { name: tool, arguments: JSON.stringify(args) } },
    [tool],
    ownerCallContext(),
  );
}

const mcpTools = (app: TestApp, server: string) =>
  app.app.tools.enabledNames().filter((name) => name.startsWith(`mcp__${server}__`));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const connectionOf = (app: TestApp, server: string) => mcpManager(app.app.context)?.connections.get(server);

describe("reload: MCP servers", () => {
  it("starts a new server (the first one loads the SDK), restarts a changed one and stops a removed one", async () => {
    running = await startTestApp({ llm: false, features: [mcpFeature], config: {} });
    const app = running;
    expect(mcpManager(app.app.context)).toBeNull();

    const added = await reload(app, { every: everythingStdio({ env: { GREETING: "first" } }) });
    expect(added.failures).toEqual([]);
    await waitForTool(app.app, "mcp__every__get-sum");
    expect(await call(app, "mcp__every__get-sum", { a: 2, b: 40 })).toContain("The sum of 2 and 40 is 42");
    await waitFor(() => connectionOf(app, "every")?.pid != null, "the server's process");
    const firstPid = connectionOf(app, "every")!.pid!;

    // A second server next to it, then a change to the first: only the first restarts.
    await reload(app, {
      every: everythingStdio({ env: { GREETING: "first" } }),
      other: everythingStdio({ tools: { allow: ["echo"] } }),
    });
    await waitForTool(app.app, "mcp__other__echo");
    expect(mcpTools(app, "other")).toEqual(["mcp__other__echo"]);
    expect(connectionOf(app, "every")!.pid).toBe(firstPid);
    const otherPid = connectionOf(app, "other")!.pid!;

    // A call in flight on the server being restarted ends at once with a clear error, not when it would finish.
    const slow = call(app, "mcp__every__trigger-long-running-operation", { duration: 30, steps: 2 }, "slow");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const startedAt = Date.now();
    const changed = await reload(app, {
      every: everythingStdio({ env: { GREETING: "second" } }),
      other: everythingStdio({ tools: { allow: ["echo"] } }),
    });
    expect(changed.failures).toEqual([]);
    expect(JSON.parse(await slow)).toMatchObject({
      ok: false,
      error: {
        code: "mcp.removed",
        message: expect.stringMatching(/'every' was restarted by a config reload .*try the call again/),
      },
    });
    expect(Date.now() - startedAt).toBeLessThan(10_000);
    await waitFor(() => !alive(firstPid), "the old process to exit");
    await waitForTool(app.app, "mcp__every__get-env");
    expect(await call(app, "mcp__every__get-env", {})).toContain("second");
    expect(connectionOf(app, "other")!.pid).toBe(otherPid);

    // Removed: its tools leave the registry, its process exits, a stale call says why.
    const stale = app.app.tools.get("mcp__other__echo")!;
    const removed = await reload(app, { every: everythingStdio({ env: { GREETING: "second" } }) });
    expect(removed.failures).toEqual([]);
    expect(mcpTools(app, "other")).toEqual([]);
    await waitFor(() => !alive(otherPid), "the removed server's process to exit");
    await expect(
      stale.execute({ message: "hi" }, { signal: new AbortController().signal } as never),
    ).rejects.toThrow(
      /MCP server 'other' was removed by a config reload \(mcpServers\.other\); its tools are gone/,
    );
    const status = await app.app.commands.get("mcp")!.run({} as never);
    expect(String(status)).toMatch(/every \(stdio\): ready/);
    expect(String(status)).not.toContain("other");
  }, 60_000);

  it("a disabled server stops (listed as disabled); enabling it again starts it", async () => {
    running = await startTestApp({
      llm: false,
      features: [mcpFeature],
      config: { mcpServers: { every: everythingStdio() } },
    });
    const app = running;
    await waitForTool(app.app, "mcp__every__get-sum");
    const pid = connectionOf(app, "every")!.pid!;
    const slow = call(app, "mcp__every__trigger-long-running-operation", { duration: 30, steps: 2 }, "slow");
    await new Promise((resolve) => setTimeout(resolve, 300));
    await reload(app, { every: everythingStdio({ enabled: false }) });
    expect(JSON.parse(await slow)).toMatchObject({ ok: false, error: { code: "mcp.removed" } });
    expect(mcpTools(app, "every")).toEqual([]);
    await waitFor(() => !alive(pid), "the disabled server's process to exit");
    expect(String(await app.app.commands.get("mcp")!.run({} as never))).toMatch(/every \(stdio\): disabled/);

    await reload(app, { every: everythingStdio() });
    await waitForTool(app.app, "mcp__every__get-sum");
    expect(await call(app, "mcp__every__get-sum", { a: 1, b: 2 })).toContain("The sum of 1 and 2 is 3");
  }, 60_000);
});
