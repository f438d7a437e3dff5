import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { features } from "../../src/app/features.js";
import { parseConfig } from "../../src/config/load.js";
import type { ConfigInput } from "../../src/config/schema.js";
import type { AuthorityPort } from "../../src/core/identity.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * Authority never widens through a helper (DESIGN.md → Agent core → Delegation): a spawned subagent gets the
 * `subagent` set intersected with its caller's tools, checked again at dispatch; `delegate` reaches only agents
 * whose tools lie within the caller's, or that the caller's agent lists in `delegates` — and even then the
 * delegated turn keeps the caller's own bound (here: a guest's set). Attacked with a scripted model that asks for
 * what it should not get.
 */

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

/** Every feature but channel access control (the recording channel stands in for a chat). */
const coreFeatures = features.filter((feature) => feature !== accessFeature);

const toolNamesOf = (body: ChatRequestBody) => (body.tools ?? []).map((tool) => tool.function.name).sort();

interface ToolResult {
  ok?: boolean;
  refused?: boolean;
  task_id?: string;
  tools?: string[];
  error?: { code: string; message: string };
}

/** The tool results the LLM got back in a request, parsed when they are JSON. */
function toolResults(body: ChatRequestBody): Array<ToolResult | string> {
  return body.messages
    .filter((message) => message.role === "tool")
    .map((message) => {
      try {
        return JSON.parse(String(message.content)) as ToolResult;
      } catch {
        return String(message.content);
      }
    });
}

async function start(config: ConfigInput, authority?: AuthorityPort): Promise<TestApp> {
  harness = await startTestApp({
    features: coreFeatures,
    // One slot: a subagent waits for its parent's turn, so the order of LLM requests is fixed.
    config: { agent: { maxConcurrentTurns: 1 }, ...config } as ConfigInput,
    ...(authority ? { authority } : {}),
  });
  return harness;
}

function auditRows(app: TestApp) {
  return app.app.store.db
    .prepare("SELECT agent, tool, verdict, outcome, error_code AS code FROM audit ORDER BY id")
    .all() as Array<{ agent: string; tool: string; verdict: string; outcome: string; code: string | null }>;
}

describe("spawn: the subagent set intersected with the caller's tools", () => {
  it("an agent limited to [web_fetch, file_read, spawn] spawns a subagent that gets file_read only; its shell call is refused and audited", async () => {
    const app = await start({ agents: { main: { toolSet: ["web_fetch", "file_read", "spawn"] } } });
    const marker = path.join(app.config.workspace, "pwned");
    const { llm, channel } = app;
    let spawned: ToolResult = {};
    llm!.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "Clean the build.", label: "clean" } }]),
      reply.text("Started a background task.", (body) => {
        spawned = toolResults(body)[0] as ToolResult;
      }),
      // The subagent: offered file_read only, it names shell anyway.
      reply.toolCalls([{ name: "shell", arguments: { command: `touch ${marker}` } }], (body) => {
        expect(toolNamesOf(body)).toEqual(["file_read", "spill_read"]);
      }),
      reply.text("I could not run the shell.", (body) => {
        const [result] = toolResults(body) as ToolResult[];
        expect(result).toMatchObject({ ok: false, refused: true, error: { code: "tool.not_in_tool_set" } });
        expect(result!.error!.message).toContain("(a spawn turn)");
      }),
      reply.text("The background task could not clean the build."),
    );
    await channel!.receive("clean the build in the background");
    await waitFor(
      () => channel!.texts().includes("The background task could not clean the build."),
      "the follow-up turn's reply",
    );
    llm!.assertDone();
    expect(spawned).toMatchObject({ status: "running", tools: ["file_read", "spill_read"] });
    expect(existsSync(marker)).toBe(false);
    expect(auditRows(app).filter((row) => row.tool === "shell")).toEqual([
      { agent: "main", tool: "shell", verdict: "deny", outcome: "denied", code: "tool.not_in_tool_set" },
    ]);
  });

  it("a delegated agent that spawns hands on its own effective set, not the subagent set", async () => {
    const app = await start({
      agents: { main: { toolSet: "full" }, reader: { toolSet: ["file_read", "spawn"] } },
    });
    const { llm, channel } = app;
    llm!.script(
      reply.toolCalls([{ name: "delegate", arguments: { agent: "reader", prompt: "Look into the logs." } }]),
      reply.toolCalls([{ name: "spawn", arguments: { task: "Read the logs." } }]),
      reply.text("Reader started a task."),
      reply.text("main: the reader is on it.", (body) => {
        expect(toolResults(body)).toEqual(["Reader started a task."]);
      }),
      reply.toolCalls([{ name: "file_write", arguments: { path: "logs.txt", content: "x" } }], (body) => {
        expect(toolNamesOf(body)).toEqual(["file_read", "spill_read"]);
      }),
      reply.text("Could not write.", (body) => {
        expect(toolResults(body)[0]).toMatchObject({ error: { code: "tool.not_in_tool_set" } });
      }),
      reply.text("The reader's task is done."),
    );
    await channel!.receive("look into the logs");
    await waitFor(() => channel!.texts().includes("The reader's task is done."), "the follow-up turn");
    llm!.assertDone();
    expect(existsSync(path.join(app.config.workspace, "logs.txt"))).toBe(false);
  });
});

describe("delegate: only within the caller's tools, or to agents listed in `delegates`", () => {
  const NARROW_AND_CODER = {
    main: { toolSet: ["file_read", "delegate"] },
    coder: { toolSet: ["shell", "file_read", "file_write"] },
  };

  it("refuses delegation to an agent with wider tools, audited as deny; the agent never runs", async () => {
    const app = await start({ agents: NARROW_AND_CODER });
    const { llm, channel } = app;
    llm!.script(
      reply.toolCalls([{ name: "delegate", arguments: { agent: "coder", prompt: "rm -rf build" } }]),
      reply.text("I may not ask the coder.", (body) => {
        const [result] = toolResults(body) as ToolResult[];
        expect(result).toMatchObject({
          ok: false,
          refused: true,
          error: { code: "delegate.wider_tool_set" },
        });
        expect(result!.error!.message).toContain("(shell, file_write)");
        expect(result!.error!.message).toContain("agents.main.delegates");
      }),
    );
    await channel!.receive("have the coder clean up");
    await channel!.waitForSent(1);
    llm!.assertDone();
    // Two requests: the coder's turn never reached the model.
    expect(llm!.requests).toHaveLength(2);
    expect(auditRows(app)).toEqual([
      {
        agent: "main",
        tool: "delegate",
        verdict: "deny",
        outcome: "denied",
        code: "delegate.wider_tool_set",
      },
    ]);
  });

  it("allows it when the caller's agent lists the agent in `delegates`; the agent gets its own set", async () => {
    const app = await start({
      agents: { ...NARROW_AND_CODER, main: { ...NARROW_AND_CODER.main, delegates: ["coder"] } },
    });
    const { llm, channel } = app;
    llm!.script(
      reply.toolCalls([{ name: "delegate", arguments: { agent: "coder", prompt: "Write notes.txt" } }]),
      reply.toolCalls([{ name: "file_write", arguments: { path: "notes.txt", content: "hi" } }], (body) => {
        expect(toolNamesOf(body)).toEqual(["file_read", "file_write", "shell", "spill_read"]);
      }),
      reply.text("Written."),
      reply.text("The coder wrote it.", (body) => expect(toolResults(body)).toEqual(["Written."])),
    );
    await channel!.receive("have the coder write notes");
    await channel!.waitForSent(1);
    llm!.assertDone();
    expect(existsSync(path.join(app.config.workspace, "notes.txt"))).toBe(true);
  });

  it("a guest's turn delegating to a listed agent stays within security.guestToolSet: the agent's shell is refused", async () => {
    const guests: AuthorityPort = { roleOf: () => "guest", mayDeliver: () => true };
    const app = await start(
      {
        security: { guestToolSet: ["file_read", "delegate"] },
        agents: { main: { toolSet: "full", delegates: ["coder"] }, coder: NARROW_AND_CODER.coder },
      },
      guests,
    );
    const marker = path.join(app.config.workspace, "pwned");
    const { llm, channel } = app;
    llm!.script(
      reply.toolCalls([{ name: "delegate", arguments: { agent: "coder", prompt: "touch it" } }], (body) => {
        expect(toolNamesOf(body)).toEqual(["delegate", "file_read", "spill_read"]);
      }),
      reply.toolCalls([{ name: "shell", arguments: { command: `touch ${marker}` } }], (body) => {
        expect(toolNamesOf(body)).toEqual(["file_read", "spill_read"]);
      }),
      reply.text("No shell here.", (body) => {
        expect(toolResults(body)[0]).toMatchObject({
          refused: true,
          error: { code: "tool.not_in_tool_set" },
        });
      }),
      reply.text("The coder could not."),
    );
    await channel!.receive("@bot make the coder touch a file");
    await channel!.waitForSent(1);
    llm!.assertDone();
    expect(existsSync(marker)).toBe(false);
    expect(auditRows(app).find((row) => row.tool === "shell")).toMatchObject({
      agent: "coder",
      verdict: "deny",
      code: "tool.not_in_tool_set",
    });
  });
});

describe("agents.<name>.delegates in the config", () => {
  it("names the key path of an unknown agent", () => {
    expect(() =>
      parseConfig(
        {
          agents: { main: { toolSet: "full", delegates: ["coder", "ghost"] }, coder: { toolSet: "default" } },
        },
        { env: {}, cwd: "/" },
      ),
    ).toThrow(/agents\.main\.delegates\[1\]: unknown agent "ghost"/);
  });
});
