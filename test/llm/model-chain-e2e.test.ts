import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/tools/define-tool.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let harness: TestApp | undefined;
let fallback: OpenAiFake;
beforeEach(async () => {
  fallback = await startOpenAiFake();
});
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
  await fallback.close();
});

let executions = 0;
const countingTool = defineTool({
  name: "count_me",
  description: "Counts how often it runs.",
  inputSchema: z.object({}),
  risk: "low",
  execute: () => `run ${++executions}`,
});

function start(extra: Record<string, unknown> = {}) {
  return startTestApp({
    extraTools: [countingTool],
    config: {
      agents: { main: { toolSet: ["count_me"] } },
      llm: { fallbacks: [{ model: "fb-model", baseUrl: fallback.url }], ...extra },
    },
  });
}

describe("model chain through the app", () => {
  it("a 503 on the primary: the chat gets the fallback's answer with a via line", async () => {
    harness = await start();
    harness.llm!.script(reply.error(503, "overloaded"));
    fallback.script(reply.text("Answer from the fallback."));
    await harness.channel!.receive("hello");
    const [sent] = await harness.channel!.waitForSent(1);
    expect(sent!.message.text).toMatch(/^Answer from the fallback\.\n\n.*via fb-model/);
    harness.llm!.assertDone();
    fallback.assertDone();
  });

  it("a tool call answered on the primary, then 500: the fallback finishes and the tool ran once", async () => {
    executions = 0;
    harness = await start();
    harness.llm!.script(reply.toolCalls([{ name: "count_me", arguments: {} }]), reply.error(500, "boom"));
    fallback.script(
      reply.text("Counted.", (body) => {
        expect(body.model).toBe("fb-model");
        // The tool result from the primary's call is in the history the fallback gets.
        expect(body.messages.at(-1)).toMatchObject({ role: "tool", content: "run 1" });
      }),
    );
    await harness.channel!.receive("count");
    const [sent] = await harness.channel!.waitForSent(1);
    expect(sent!.message.text).toMatch(/^Counted\.\n\n.*via fb-model/);
    expect(executions).toBe(1);
    expect(harness.llm!.requests).toHaveLength(2);
    harness.llm!.assertDone();
    fallback.assertDone();
  });

  it("a 400 does not fail over: one clear message naming the model and the status", async () => {
    harness = await start();
    harness.llm!.script(reply.error(400, "This model's maximum context length is 8192 tokens"));
    await harness.channel!.receive("hello");
    const [sent] = await harness.channel!.waitForSent(1);
    expect(sent!.message.text).toBe(
      `The language model provider refused the request to "test-model" (400): This model's maximum context length is 8192 tokens`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(harness.channel!.texts()).toHaveLength(1);
    expect(fallback.requests).toHaveLength(0);
  });

  it("both down: exactly one message in the chat", async () => {
    harness = await start();
    harness.llm!.script(reply.error(503, "overloaded"));
    fallback.script(reply.error(502, "bad gateway"));
    await harness.channel!.receive("hello");
    const [sent] = await harness.channel!.waitForSent(1);
    expect(sent!.message.text).toBe(
      "All configured models failed, so I can't answer right now:\n• test-model: HTTP 503\n• fb-model: HTTP 502",
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(harness.channel!.texts()).toHaveLength(1);
  });

  it("a 401 primary is cooled down: the next message goes straight to the fallback", async () => {
    harness = await start();
    harness.llm!.script(reply.error(401, "invalid api key"));
    fallback.script(reply.text("first"), reply.text("second"));
    await harness.channel!.receive("one");
    await harness.channel!.waitForSent(1);
    await harness.channel!.receive("two");
    await harness.channel!.waitForSent(2);
    expect(harness.channel!.texts().map((text) => text.split("\n")[0])).toEqual(["first", "second"]);
    expect(harness.llm!.requests).toHaveLength(1);
  });
});

function doctor(yaml: string) {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-doctor-"));
  writeFileSync(path.join(cwd, "magpie.yaml"), yaml);
  return new Promise<{ code: number | null; stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [...MAGPIE_NODE_ARGS, "doctor", "--config", "magpie.yaml"], {
      cwd,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
    let stdout = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.on("exit", (code) => resolve({ code, stdout }));
  });
}

describe("magpie doctor checks every entry of the chain", () => {
  it("one ✓/✗ line per entry, each ✗ with its fix", async () => {
    const primary = await startOpenAiFake();
    try {
      primary.models = ["test-model"];
      fallback.models = ["fb-model"];
      const result = await doctor(
        [
          "llm:",
          `  baseUrl: "${primary.url}"`,
          "  apiKey: sk-test",
          "  model: test-model",
          "  fallbacks:",
          `    - { model: fb-model, baseUrl: "${fallback.url}" }`,
          `    - { model: missing-model, baseUrl: "${fallback.url}" }`,
          `    - { model: fb-model, baseUrl: "${fallback.url}", apiKey: sk-wrong }`,
          "    - { model: far-away, baseUrl: http://127.0.0.1:9/v1 }",
          "",
        ].join("\n"),
      );
      expect(result.stdout).toMatch(/^✓ llm: .* reachable \(model test-model\)$/m);
      expect(result.stdout).toMatch(/^✓ llm fallback 1: .* reachable \(model fb-model\)$/m);
      expect(result.stdout).toMatch(
        /^✗ llm fallback 2: .* has no model "missing-model" \(it offers fb-model\) — fix: check llm\.fallbacks\[1\]\.model/m,
      );
      expect(result.stdout).toMatch(
        /^✗ llm fallback 3: .* rejected the API key \(401\) — fix: check llm\.fallbacks\[2\]\.apiKey$/m,
      );
      expect(result.stdout).toMatch(
        /^✗ llm fallback 4: cannot reach http:\/\/127\.0\.0\.1:9\/v1: .* — fix: start the LLM server or correct llm\.fallbacks\[3\]\.baseUrl$/m,
      );
      expect(result.code).toBe(1);
      expect(primary.errors).toEqual([]);
      expect(fallback.errors).toEqual([]);
    } finally {
      await primary.close();
    }
  });
});
