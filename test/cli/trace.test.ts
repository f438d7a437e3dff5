import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { traceFeature } from "../../src/app/trace-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { run } from "../../src/cli/commands/trace.js";
import type { AccessControl } from "../../src/core/access.js";
import { Store } from "../../src/store/index.js";
import { TraceRepository, traceOf } from "../../src/store/trace.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { testToolNames, testTools } from "../helpers/test-tools.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

/** Strangers (user "stranger") are refused; everyone else may talk. */
const strangersRefused: AccessControl = {
  check: (message) =>
    message.userId === "stranger" ? { allow: false, reason: "dm.not_allowed" } : { allow: true },
};

async function trace(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const sink = (write: (text: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        write(String(chunk));
        done();
      },
    });
  const code = await run(args, {
    loadConfig: () => harness!.config,
    openStore: (config) => Store.open(config.dataDir),
    stdout: sink((text) => (stdout += text)),
    stderr: sink((text) => (stderr += text)),
  });
  return { code, stdout, stderr };
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("magpie trace", () => {
  it("tells a message's life from the database: access, turn, LLM and tool calls, outbox ids, outcome", async () => {
    harness = await startTestApp({
      extraTools: testTools,
      features: [usageFeature, traceFeature],
      access: strangersRefused,
      config: {
        agents: { main: { toolSet: testToolNames } },
        llm: { prices: { "test-model": { input: 3, output: 15 } } },
      },
    });
    const { llm, channel, app } = harness;
    llm!.script(
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 2, b: 3 } }]),
      reply.text("It is 5."),
      reply.error(503, "upstream down"),
    );
    const first = await channel!.receive("what is 2+3?");
    const inboxId = first.status === "accepted" ? first.inboxId : -1;
    await channel!.waitForSent(1);
    await until(() => app.store.outbox.pendingCount() === 0);
    await until(() => app.store.inbox.get(inboxId)?.outcome === "answered");

    const text = await trace([String(inboxId)]);
    expect(text.code).toBe(0);
    const out = text.stdout;
    expect(out).toContain(`Message ${inboxId} · test:chat-1:in-1`);
    expect(out).toContain("access: allowed");
    expect(out).toContain(`turn inbox:${inboxId} · user · agent main · ok`);
    expect(out).toMatch(/llm chat test-model · \d+\+\d+ tokens · \$0\.\d+ · \d+ ms · ok/);
    expect(out).toMatch(/tool add_numbers · verdict allow · \d+ ms · ok/);
    expect(out).toContain("(reply) · sent after 1 attempt(s) · 1 part(s) · platform ids m2");
    expect(out).toContain("outcome: answered");
    // Same message by its platform id, and as `last`.
    expect((await trace(["test:chat-1:in-1"])).stdout).toBe(out);
    expect((await trace(["last"])).stdout).toBe(out);

    const json = JSON.parse((await trace([String(inboxId), "--json"])).stdout);
    expect(json).toMatchObject({ inboxId, outcome: "answered", access: { verdict: "allowed" } });
    expect(json.turns[0].steps.map((step: { type: string }) => step.type)).toEqual(["llm", "tool", "llm"]);
    expect(json.deliveries[0]).toMatchObject({ status: "sent", platformMessageIds: ["m2"] });

    // A failed turn: the chat was told, the trace names the cause.
    const second = await channel!.receive("and now?");
    const failedId = second.status === "accepted" ? second.inboxId : -1;
    await channel!.waitForSent(2);
    await until(() => app.store.inbox.get(failedId)?.outcome === "failed");
    const failed = (await trace(["last"])).stdout;
    expect(failed).toMatch(/llm chat test-model · 0\+0 tokens · \d+ ms · failed \(llm\.\w+\)/);
    expect(failed).toMatch(/outcome: failed — llm\./);

    // A stranger: refused, kept as metadata only — never the text.
    const refused = await channel!.receive("let me in, secret-stranger-text", {
      userId: "stranger",
      messageId: "x-9",
    });
    expect(refused.status).toBe("denied");
    const strangerTrace = await trace(["test:chat-1:x-9"]);
    expect(strangerTrace.code).toBe(0);
    expect(strangerTrace.stdout).toContain("access: refused (dm.not_allowed)");
    expect(strangerTrace.stdout).toContain("outcome: refused");
    const stored = app.store.db.prepare("SELECT * FROM trace_events").all();
    expect(JSON.stringify(stored)).not.toContain("secret-stranger-text");
    expect(JSON.stringify(app.store.db.prepare("SELECT payload FROM inbox").all())).not.toContain(
      "secret-stranger-text",
    );

    const chat = await trace(["--chat", "test:chat-1"]);
    expect(chat.code).toBe(0);
    const lines = chat.stdout.trim().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain("refused");
    expect(lines[1]).toContain(`#${failedId}  failed`);
    expect(lines[2]).toContain(`#${inboxId}  answered`);
  });

  it("an unknown flag or a missing message prints the usage and exits 2; an unknown message exits 1", async () => {
    harness = await startTestApp({ features: [traceFeature] });
    for (const args of [["--verbose", "1"], [], ["1", "2"], ["--chat", "nochat"], ["--limit", "x", "last"]]) {
      const result = await trace(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toContain("Usage: magpie trace");
    }
    const missing = await trace(["999"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('No message "999"');
  });

  it("a call made for a turn before it started (a voice note's transcription) is shown in that turn", () => {
    const store = Store.open(":memory:");
    const inboxId = store.inbox.insert(
      {
        channel: "test",
        chatId: "c",
        messageId: "v1",
        userId: "u",
        userName: "U",
        text: "[voice]",
        isDirect: true,
        mentionsBot: false,
        attachments: [],
        receivedAt: 1_000,
      },
      "test:c",
    )!;
    const trace = new TraceRepository(store.db);
    const turnId = `inbox:${inboxId}`;
    trace.record({
      at: 1_100,
      kind: "llm",
      turnId,
      data: { kind: "transcription", model: "whisper-1", result: "ok" },
    });
    trace.record({
      at: 1_200,
      kind: "turn_started",
      inboxId,
      turnId,
      data: { origin: "user", agent: "main" },
    });
    trace.record({ at: 1_300, kind: "llm", turnId, data: { kind: "chat", model: "m", result: "ok" } });
    trace.record({
      at: 1_400,
      kind: "turn_finished",
      turnId,
      data: { origin: "user", agent: "main", status: "ok" },
    });
    const result = traceOf(trace, store.inbox.get(inboxId)!);
    expect(result.turns).toHaveLength(1);
    expect(result.turns[0]!.steps.map((step) => (step.type === "llm" ? step.kind : step.tool))).toEqual([
      "transcription",
      "chat",
    ]);
    store.close();
  });
});
