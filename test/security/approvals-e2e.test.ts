import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { securityFeature } from "../../src/app/security-feature.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let running: TestApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

async function start(require: string[], extra: Record<string, unknown> = {}) {
  running = await startTestApp({
    features: [securityFeature],
    config: { security: { approvals: { require, timeoutSecs: 5 } }, ...extra },
  });
  return running;
}

/** The tool message the LLM received in its n-th request (0-based). */
function toolResult(app: TestApp, requestIndex: number): string {
  const message = app.llm!.requests[requestIndex]!.messages.find((entry) => entry.role === "tool");
  return String(message?.content ?? "");
}

describe("approvals end to end (agent turn pauses, chat decides)", () => {
  it("Approve button: the shell call runs and its output reaches the model", async () => {
    const app = await start(["shell"]);
    app.llm!.script(
      reply.toolCalls([{ name: "shell", arguments: { command: "echo approved-run" } }]),
      reply.text("done"),
    );
    await app.channel!.receive("please run it");
    const [request] = await app.channel!.waitForSent(1);
    expect(request!.message.text).toContain("Approval needed");
    expect(request!.message.text).toContain('shell {"command":"echo approved-run"}');
    const approveId = request!.message.buttons![0]![0]!.id;
    expect(approveId).toMatch(/^approve:[0-9a-f]+$/);
    await app.channel!.press({ buttonId: approveId });
    const texts = (await app.channel!.waitForSent(3)).map((entry) => entry.message.text);
    expect(texts).toContain("done");
    expect(toolResult(app, 1)).toContain("approved-run");
    app.llm!.assertDone();
  });

  it("/deny <id>: the call is not run and the model is told", async () => {
    const app = await start(["risk:high"]);
    app.llm!.script(
      reply.toolCalls([{ name: "shell", arguments: { command: "touch should-not-exist" } }]),
      reply.text("ok, not done"),
    );
    await app.channel!.receive("do it");
    const [request] = await app.channel!.waitForSent(1);
    const id = request!.message.buttons![0]![1]!.id.split(":")[1]!;
    await app.channel!.receive(`/deny ${id}`);
    await app.channel!.waitForSent(3);
    expect(app.channel!.texts()).toContain("ok, not done");
    const result = JSON.parse(toolResult(app, 1));
    expect(result.error.code).toBe("approval.denied");
    const shellAudit = app.app.store.audit.recent(10, "shell")[0]!;
    expect(shellAudit).toMatchObject({ verdict: "denied-by-user", outcome: "denied" });
    app.llm!.assertDone();
  });

  it("secrets are redacted from tool output before the model sees them, and from the audit log", async () => {
    const app = await start([], { tools: { web: { braveApiKey: "brave-key-SECRET-987654" } } });
    // The secret sits in a file the model has never seen; only the tool output could carry it.
    await fs.mkdir(app.config.workspace, { recursive: true });
    await fs.writeFile(path.join(app.config.workspace, "notes.txt"), "key=brave-key-SECRET-987654\n");
    app.llm!.script(
      reply.toolCalls([{ name: "shell", arguments: { command: "cat notes.txt" } }]),
      reply.text("finished"),
    );
    await app.channel!.receive("print the key");
    await app.channel!.waitForSent(1);
    const sentToLlm = JSON.stringify(app.llm!.requests);
    expect(sentToLlm).not.toContain("brave-key-SECRET-987654");
    expect(toolResult(app, 1)).toContain("key=[REDACTED]");
    const audit = app.app.store.audit.recent(10, "shell")[0]!;
    expect(audit.arguments).not.toContain("brave-key-SECRET-987654");
    expect(audit.resultExcerpt).not.toContain("brave-key-SECRET-987654");
  });
});
