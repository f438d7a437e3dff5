import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { mcpFeature, mcpManager } from "../../src/app/mcp-feature.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { EVERYTHING, waitFor, waitForTool } from "./mcp-helpers.js";

let running: TestApp | null = null;
let server: ChildProcess | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
  server?.kill("SIGKILL");
  server = null;
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** server-everything in its streamable HTTP mode, on a free port of 127.0.0.1. */
async function startHttpServer(): Promise<string> {
  const port = await freePort();
  server = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  server.stderr?.on("data", (chunk) => (stderr += chunk));
  await waitFor(() => stderr.includes("listening on port"), "the HTTP MCP server");
  return `http://127.0.0.1:${port}/mcp`;
}

describe("an MCP server over streamable HTTP", () => {
  it("discovers and calls tools at a url, with allow narrowing what is offered", async () => {
    const url = await startHttpServer();
    running = await startTestApp({
      features: [mcpFeature],
      config: {
        mcpServers: { web: { url, headers: { "x-test": "yes" }, tools: { allow: ["echo", "get-sum"] } } },
      },
    });
    await waitForTool(running.app, "mcp__web__echo");
    expect(
      running.app.tools
        .enabledNames()
        .filter((name) => name.startsWith("mcp__web__"))
        .sort(),
    ).toEqual(["mcp__web__echo", "mcp__web__get-sum"]);
    const result = await running.app.tools.execute(
      {
        id: "h1",
        type: "function",
        function: { name: "mcp__web__echo", arguments: '{"message":"over http"}' },
      },
      ["mcp__web__echo"],
      ownerCallContext(),
    );
    expect(result).toContain("Echo: over http");
    const status = String(await running.app.commands.get("mcp")!.run({} as never));
    expect(status).toMatch(/web \(http\): ready, 2 of \d+ tools offered/);
  }, 30_000);
});

describe("start-up", () => {
  it("does not wait for a slow server; its tools appear later and /mcp says it is starting", async () => {
    const started = Date.now();
    running = await startTestApp({
      features: [mcpFeature],
      config: {
        mcpServers: {
          // A server that never answers `initialize`.
          mute: { command: process.execPath, args: ["-e", "setTimeout(() => {}, 60000)"] },
        },
      },
    });
    expect(Date.now() - started).toBeLessThan(3_000);
    await waitFor(() => mcpManager(running!.app.context) !== null, "the MCP manager");
    const status = String(await running.app.commands.get("mcp")!.run({} as never));
    expect(status).toContain("mute (stdio): starting, 0 tools");
  }, 15_000);

  it("rejects a server with both command and url, or neither, naming the key", async () => {
    await expect(
      startTestApp({
        features: [],
        config: { mcpServers: { bad: { command: "x", url: "http://127.0.0.1:1/mcp" } } },
      }),
    ).rejects.toThrow(/mcpServers\.bad.*either command/);
    await expect(
      startTestApp({
        features: [],
        config: { mcpServers: { bad: { url: "http://127.0.0.1:1/mcp", env: { A: "b" } } } },
      }),
    ).rejects.toThrow(/mcpServers\.bad\.env.*stdio/);
  });
});
