import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mcpFeature, mcpManager, mcpTiming } from "../../src/app/mcp-feature.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { everythingStdio, waitFor, waitForTool } from "./mcp-helpers.js";

const CANARY = "magpie-canary-4f1c9e";
let running: TestApp;

/** The content of the last tool message the model was sent. */
function lastToolResult(body: ChatRequestBody): string {
  const tool = body.messages.filter((message) => message.role === "tool").pop();
  return String(tool?.content ?? "");
}

async function ask(text: string): Promise<string> {
  const channel = running.channel!;
  const before = channel.sent.length;
  await channel.receive(text);
  const sent = await channel.waitForSent(before + 1, 20_000);
  return sent[before]!.message.text;
}

beforeAll(async () => {
  // A secret in Magpie's own environment: a stdio server must never see it.
  process.env.MAGPIE_TEST_CANARY = CANARY;
  mcpTiming.backoffMs = 200;
  running = await startTestApp({
    features: [mcpFeature],
    config: {
      mcpServers: {
        every: everythingStdio({
          env: { GREETING: "hello-from-config" },
          tools: { deny: ["trigger-long-running-operation"] },
        }),
      },
    },
  });
  await waitForTool(running.app, "mcp__every__get-sum");
}, 30_000);

afterAll(async () => {
  delete process.env.MAGPIE_TEST_CANARY;
  mcpTiming.backoffMs = 1_000;
  await running?.stop();
});

describe("an MCP server over stdio (server-everything from npm)", () => {
  it("offers its tools as mcp__<server>__<tool> with their JSON Schema, and a call's result reaches the model", async () => {
    const llm = running.llm!;
    let offered: ChatRequestBody["tools"] = [];
    llm.script(
      reply.toolCalls([{ name: "mcp__every__get-sum", arguments: { a: 2, b: 40 } }], (body) => {
        offered = body.tools;
      }),
      reply.text("The sum is 42.", (body) =>
        expect(lastToolResult(body)).toContain("The sum of 2 and 40 is 42"),
      ),
    );
    expect(await ask("add 2 and 40")).toBe("The sum is 42.");
    llm.assertDone();
    const sum = offered?.find((tool) => tool.function.name === "mcp__every__get-sum");
    expect(sum?.function.parameters).toMatchObject({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    });
    expect(sum?.function.description).toContain("MCP server 'every'");
    // Denied by tools.deny: never offered, and not in the registry.
    expect(offered?.some((tool) => tool.function.name === "mcp__every__trigger-long-running-operation")).toBe(
      false,
    );
    expect(running.app.tools.get("mcp__every__trigger-long-running-operation")).toBeUndefined();
  });

  it("refuses invalid arguments before the server sees them", async () => {
    const result = await running.app.tools.execute(
      {
        id: "c1",
        type: "function",
        function: { name: "mcp__every__get-sum", arguments: '{"a":"two","b":3}' },
      },
      ["mcp__every__get-sum"],
      ownerCallContext(),
    );
    expect(JSON.parse(result)).toMatchObject({ ok: false, error: { code: "tool.invalid_arguments" } });
    expect(result).toContain("must be number");
  });

  it("gives the server only its configured env and the SDK's safe defaults, never Magpie's environment", async () => {
    const result = await running.app.tools.execute(
      { id: "c2", type: "function", function: { name: "mcp__every__get-env", arguments: "{}" } },
      ["mcp__every__get-env"],
      ownerCallContext(),
    );
    const env = JSON.parse(result) as Record<string, string>;
    expect(env.GREETING).toBe("hello-from-config");
    expect(result).not.toContain(CANARY);
    expect(env.MAGPIE_TEST_CANARY).toBeUndefined();
    const allowed = new Set(["GREETING", "PATH", "HOME", "USER", "SHELL", "TERM", "LOGNAME"]);
    // Node itself may add a few of its own (none of Magpie's).
    expect(Object.keys(env).filter((key) => !allowed.has(key) && !key.startsWith("npm_"))).toEqual([]);
  });

  it("read-only annotated tools are low risk, the rest high; structured content and images become text", async () => {
    expect(running.app.tools.get("mcp__every__get-sum")?.risk).toBe("low");
    expect(running.app.tools.get("mcp__every__toggle-simulated-logging")?.risk).toBe("high");
    const image = await running.app.tools.execute(
      { id: "c3", type: "function", function: { name: "mcp__every__get-tiny-image", arguments: "{}" } },
      ["mcp__every__get-tiny-image"],
      ownerCallContext(),
    );
    expect(image).toMatch(
      /\[image saved to mcp-files\/every-get-tiny-image-.*\.png \(image\/png, \d+ bytes\)\]/,
    );
  });

  it("never gives MCP tools to the subagent set or a spawned turn, even when named", async () => {
    const registry = running.app.tools;
    expect(registry.resolveToolSet("full")).toContain("mcp__every__get-sum");
    expect(registry.resolveToolSet("subagent").some((name) => name.startsWith("mcp__"))).toBe(false);
    expect(registry.resolveToolSet(["mcp__every__get-sum"])).toContain("mcp__every__get-sum");
    const result = await registry.execute(
      { id: "c4", type: "function", function: { name: "mcp__every__get-sum", arguments: '{"a":1,"b":1}' } },
      ["mcp__every__get-sum"],
      ownerCallContext(undefined, { origin: "spawn", canAsk: false }),
    );
    expect(JSON.parse(result)).toMatchObject({ ok: false, error: { code: "tool.not_in_tool_set" } });
  });

  it("a killed server answers 'server unavailable', is restarted, and works again; /mcp shows it", async () => {
    const manager = () => running.app.commands.get("mcp")!;
    const status = await manager().run({} as never);
    expect(String(status)).toMatch(/every \(stdio\): ready, \d+ of \d+ tools offered/);
    const connection = await findConnection();
    const pid = connection.pid!;
    process.kill(pid, "SIGKILL");
    await waitFor(() => connection.state !== "ready", "the server to be seen gone");
    const call = () =>
      running.app.tools.execute(
        { id: "c5", type: "function", function: { name: "mcp__every__get-sum", arguments: '{"a":1,"b":2}' } },
        ["mcp__every__get-sum"],
        ownerCallContext(),
      );
    expect(JSON.parse(await call())).toMatchObject({ ok: false, error: { code: "mcp.unavailable" } });
    await waitFor(() => connection.state === "ready", "the restart", 20_000);
    expect(connection.pid).not.toBe(pid);
    expect(await call()).toContain("The sum of 1 and 2 is 3");
    expect(String(await manager().run({} as never))).toContain("restarted 1×");
  }, 30_000);
});

/** The live connection, through the feature's manager. */
async function findConnection() {
  const connection = mcpManager(running.app.context)?.connections.get("every");
  if (!connection) throw new Error("no connection named every");
  return connection;
}
