import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { features } from "../../src/app/features.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * `delegate` (DESIGN.md → Agent core → Delegation) through the whole app with the scripted LLM: the delegated
 * agent's own tool set, its answer as the tool result, the caller's session in the audit log, the depth limit.
 */

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

/** Every feature but channel access control (the recording channel stands in for a chat). */
const coreFeatures = features.filter((feature) => feature !== accessFeature);

const FORBIDDEN =
  /^(message|spawn|delegate|schedule|cron_.*|memory_.*|composio|browser.*|ask_question|pushover|mcp__.*)$/;

const toolNamesOf = (body: ChatRequestBody) => (body.tools ?? []).map((tool) => tool.function.name);

/** The tool results the LLM got back in a request, parsed when they are JSON. */
function toolResults(body: ChatRequestBody): unknown[] {
  return body.messages
    .filter((message) => message.role === "tool")
    .map((message) => {
      try {
        return JSON.parse(String(message.content));
      } catch {
        return message.content;
      }
    });
}

describe("delegate", () => {
  it("runs the named agent with its own (subagent) tool set, returns its answer, audits under the caller's session", async () => {
    harness = await startTestApp({
      features: coreFeatures,
      config: { agents: { main: { toolSet: "full" }, helper: { toolSet: "subagent" } } },
    });
    const { llm, channel, app } = harness;
    llm!.script(
      reply.toolCalls(
        [
          {
            name: "delegate",
            arguments: { agent: "helper", prompt: "Write the report", context: "Title: Q3" },
          },
        ],
        (body) => expect(toolNamesOf(body)).toEqual(expect.arrayContaining(["delegate", "spawn", "message"])),
      ),
      reply.toolCalls(
        [{ name: "file_write", arguments: { path: "report.txt", content: "Q3 is fine" } }],
        (body) => {
          const names = toolNamesOf(body);
          expect(names.filter((name) => FORBIDDEN.test(name))).toEqual([]);
          expect(names.sort()).toEqual([
            "file_edit",
            "file_read",
            "file_write",
            "git_operations",
            "shell",
            "spill_read",
          ]);
          // The delegated agent sees the prompt and context, not the caller's conversation.
          expect(body.messages.at(-1)).toMatchObject({
            role: "user",
            content: "Write the report\n\nContext:\nTitle: Q3",
          });
          expect(JSON.stringify(body.messages)).not.toContain("please delegate");
        },
      ),
      reply.text("Report written to report.txt."),
      reply.text("The helper wrote it.", (body) => {
        expect(body.messages.at(-1)).toMatchObject({
          role: "tool",
          content: "Report written to report.txt.",
        });
      }),
    );
    await channel!.receive("please delegate the report");
    await channel!.waitForSent(1);
    expect(channel!.texts()).toEqual(["The helper wrote it."]);
    llm!.assertDone();
    expect(readFileSync(path.join(harness.config.workspace, "report.txt"), "utf8")).toBe("Q3 is fine");
    const audit = app.store.db
      .prepare("SELECT session_key AS session, agent, tool, verdict, outcome FROM audit ORDER BY id")
      .all();
    expect(audit).toEqual([
      { session: "test:chat-1", agent: "helper", tool: "file_write", verdict: "allow", outcome: "ok" },
      { session: "test:chat-1", agent: "main", tool: "delegate", verdict: "allow", outcome: "ok" },
    ]);
    // The delegated turn kept a history of its own; the chat's history has only its own turn.
    const delegated = app.store.db
      .prepare("SELECT key FROM sessions WHERE key LIKE 'delegate:test:chat-1:%'")
      .all();
    expect(delegated).toHaveLength(1);
    expect(app.store.history.load("test:chat-1").map((item) => item.message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
  });

  it("runs three nested delegations and refuses a fourth with delegate.depth_exceeded, inside one turn slot", async () => {
    harness = await startTestApp({
      features: coreFeatures,
      config: {
        // One slot: a delegated turn that wanted a second one would wait for ever.
        agent: { maxConcurrentTurns: 1 },
        agents: { main: { toolSet: "full" }, relay: { toolSet: ["delegate", "file_read"] } },
      },
    });
    const { llm, channel, app } = harness;
    const delegateCall = (level: number) =>
      reply.toolCalls([{ name: "delegate", arguments: { agent: "relay", prompt: `level ${level}` } }]);
    llm!.script(
      delegateCall(1),
      delegateCall(2),
      delegateCall(3),
      delegateCall(4),
      reply.text("answer from level 3", (body) => {
        expect(body.messages.at(-2)).toMatchObject({ role: "assistant" });
        const [refusal] = toolResults(body) as Array<{
          ok: boolean;
          error: { code: string; message: string };
        }>;
        expect(refusal).toMatchObject({ ok: false, error: { code: "delegate.depth_exceeded" } });
        expect(refusal!.error.message).toContain("agent.maxDelegationDepth is 3");
      }),
      reply.text("answer from level 2", (body) => expect(toolResults(body)).toEqual(["answer from level 3"])),
      reply.text("answer from level 1", (body) => expect(toolResults(body)).toEqual(["answer from level 2"])),
      reply.text("all the way down and back", (body) =>
        expect(toolResults(body)).toEqual(["answer from level 1"]),
      ),
    );
    await channel!.receive("go deep");
    await channel!.waitForSent(1);
    expect(channel!.texts()).toEqual(["all the way down and back"]);
    llm!.assertDone();
    // The prompts reached levels 1–3; the fourth never ran.
    expect(llm!.requests.slice(1, 4).map((body) => body.messages.at(-1)?.content)).toEqual([
      "level 1",
      "level 2",
      "level 3",
    ]);
    const outcomes = app.store.db
      .prepare("SELECT agent, error_code AS code FROM audit WHERE tool = 'delegate' ORDER BY id")
      .all();
    expect(outcomes).toEqual([
      { agent: "relay", code: "delegate.depth_exceeded" },
      { agent: "relay", code: null },
      { agent: "relay", code: null },
      { agent: "main", code: null },
    ]);
  });

  it("names the configured agents when asked for an unknown one", async () => {
    harness = await startTestApp({
      features: coreFeatures,
      config: { agents: { main: { toolSet: "full" }, helper: { toolSet: "subagent" } } },
    });
    const { llm, channel } = harness;
    llm!.script(
      reply.toolCalls([{ name: "delegate", arguments: { agent: "nobody", prompt: "hi" } }]),
      reply.text("No such agent.", (body) => {
        expect(toolResults(body)).toEqual([
          {
            ok: false,
            error: {
              code: "delegate.unknown_agent",
              message: 'There is no agent named "nobody". Agents: main, helper.',
            },
          },
        ]);
      }),
    );
    await channel!.receive("ask nobody");
    await channel!.waitForSent(1);
    llm!.assertDone();
  });
});
