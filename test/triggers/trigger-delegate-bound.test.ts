import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { features } from "../../src/app/features.js";
import type { ConfigInput } from "../../src/config/schema.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * A job's or trigger's own tool set bounds what its turn delegates to (DESIGN.md → Agent core → Delegation, and
 * "Jobs carry their creator's authority"): the bound handed on to a delegated turn is the creator's tools narrowed
 * by the action's `toolSet`, not the creator's tools alone. Attacked with a scripted model: the creator's turn has
 * shell, the action's set leaves it out, and the action's turn delegates to a listed agent that has shell.
 */

const SECRET = "d".repeat(32);

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

/** Every feature but channel access control (the recording channel stands in for an owner's chat). */
const coreFeatures = features.filter((feature) => feature !== accessFeature);

const toolNamesOf = (body: ChatRequestBody) => (body.tools ?? []).map((tool) => tool.function.name).sort();

function toolResults(body: ChatRequestBody): Array<Record<string, unknown>> {
  return body.messages
    .filter((message) => message.role === "tool")
    .map((message) => JSON.parse(String(message.content)) as Record<string, unknown>);
}

/** `coder` has shell; `main` lists it in `delegates`, so only the bound handed on keeps shell from it. */
const AGENTS = (mainTools: string[]) => ({
  main: { toolSet: mainTools, delegates: ["coder"] },
  coder: { toolSet: ["shell", "file_read"] },
});

async function start(config: ConfigInput): Promise<TestApp> {
  harness = await startTestApp({
    features: coreFeatures,
    // One slot: the delegated turn runs in its caller's, so the order of LLM requests is fixed.
    config: { agent: { maxConcurrentTurns: 1 }, ...config } as ConfigInput,
  });
  return harness;
}

function shellAudit(app: TestApp) {
  return app.app.store.db
    .prepare("SELECT agent, verdict, outcome, error_code AS code FROM audit WHERE tool = 'shell' ORDER BY id")
    .all();
}

/**
 * The action's turn (tools: delegate, file_read) delegates to coder, which is offered file_read only and names
 * shell anyway: refused as outside its tool set. Four LLM steps, checked as they are asked.
 */
function delegatedShellAttack(marker: string, done: string) {
  return [
    reply.toolCalls(
      [{ name: "delegate", arguments: { agent: "coder", prompt: "Touch the marker." } }],
      (body) => {
        expect(toolNamesOf(body)).toEqual(["delegate", "file_read", "spill_read"]);
      },
    ),
    reply.toolCalls([{ name: "shell", arguments: { command: `touch ${marker}` } }], (body) => {
      expect(toolNamesOf(body)).toEqual(["file_read", "spill_read"]);
    }),
    reply.text("No shell here.", (body) => {
      expect(toolResults(body)[0]).toMatchObject({
        ok: false,
        refused: true,
        error: { code: "tool.not_in_tool_set" },
      });
    }),
    reply.text(done, (body) => {
      expect(body.messages.filter((message) => message.role === "tool").map((m) => m.content)).toEqual([
        "No shell here.",
      ]);
    }),
  ];
}

describe("a trigger's own tool set bounds its delegations", () => {
  it("attack: a chat-made prompt trigger with toolSet [file_read, delegate] delegates to a listed coder; coder gets no shell and its shell call is refused", async () => {
    const app = await start({ agents: AGENTS(["trigger_add", "delegate", "shell", "file_read"]) });
    const marker = path.join(app.config.workspace, "pwned");
    const { llm, channel } = app;
    llm!.script(
      reply.toolCalls([
        {
          name: "trigger_add",
          arguments: {
            name: "nightly",
            on: { webhook: { secret: SECRET } },
            do: { prompt: "Check the build.", toolSet: ["file_read", "delegate"] },
          },
        },
      ]),
      reply.text("Made.", (body) => {
        expect(toolResults(body)[0]).toMatchObject({ trigger: { name: "nightly", source: "chat" } });
      }),
      ...delegatedShellAttack(marker, "The coder could not run it."),
    );
    await channel!.receive("make a webhook trigger that checks the build");
    await waitFor(() => channel!.texts().includes("Made."), "the trigger_add answer");
    // The trigger's creator is the chat turn, with shell among its tools.
    const triggers = app.app.context.services.triggers!;
    expect(triggers.list().map((view) => view.name)).toEqual(["nightly"]);

    const body = JSON.stringify({ build: 42 });
    const timestamp = Math.floor(Date.now() / 1000);
    const response = await fetch(`${app.url}/hooks/nightly`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-magpie-timestamp": String(timestamp),
        "x-magpie-signature": signWebhook(SECRET, timestamp, body),
      },
      body,
    });
    expect(response.status).toBe(202);
    await waitFor(() => channel!.texts().includes("The coder could not run it."), "the trigger's report");
    llm!.assertDone();
    expect(existsSync(marker)).toBe(false);
    expect(shellAudit(app)).toEqual([
      { agent: "coder", verdict: "deny", outcome: "denied", code: "tool.not_in_tool_set" },
    ]);
  });
});

/**
 * Prompt jobs: no chat tool sets a job's `toolSet` (cron_add/cron_update/schedule have no such field; chat jobs run
 * with `default` narrowed to their creator's tools), so a job's own set is narrower than a chat creator's only when
 * a chat turn takes over a config job that names one: cron_update with a new prompt makes the turn the job's
 * creator (with its tools) and keeps the config's `toolSet`.
 */
describe("a prompt job's own tool set bounds its delegations", () => {
  it("attack: a config job with toolSet [file_read, delegate] taken over by a chat turn with shell delegates to a listed coder; coder's shell is refused", async () => {
    const app = await start({
      agents: AGENTS(["cron_update", "delegate", "shell", "file_read"]),
      cron: {
        jobs: [
          {
            name: "yearly",
            expression: "0 0 1 1 *",
            prompt: "Say hello.",
            toolSet: ["file_read", "delegate"],
            deliver: { mode: "none" },
          },
        ],
      },
    });
    const marker = path.join(app.config.workspace, "pwned");
    const { llm, channel } = app;
    llm!.script(
      reply.toolCalls([{ name: "cron_update", arguments: { job_id: "yearly", prompt: "Check the build." } }]),
      reply.text("Updated.", (body) => {
        expect(toolResults(body)[0]).not.toHaveProperty("error");
      }),
      ...delegatedShellAttack(marker, "The coder could not run it."),
    );
    await channel!.receive("make the yearly job check the build");
    await waitFor(() => channel!.texts().includes("Updated."), "the cron_update answer");

    const scheduler = app.app.context.services.scheduler as Scheduler;
    const run = await scheduler.runNow(scheduler.resolve("yearly"));
    expect(run).toMatchObject({ status: "ok", output: "The coder could not run it." });
    llm!.assertDone();
    expect(existsSync(marker)).toBe(false);
    expect(shellAudit(app)).toEqual([
      { agent: "coder", verdict: "deny", outcome: "denied", code: "tool.not_in_tool_set" },
    ]);
  });
});
