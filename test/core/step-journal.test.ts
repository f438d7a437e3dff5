import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { securityFeature } from "../../src/app/security-feature.js";
import { traceFeature } from "../../src/app/trace-feature.js";
import { outcomeUnknownText } from "../../src/core/agent-loop.js";
import { Store } from "../../src/store/index.js";
import type { JournalStep } from "../../src/store/step-journal.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * The step journal (DESIGN.md → Durable turns): a turn cut off by a crash resumes from its journal. The crash is the
 * state a SIGKILL leaves in the database (the shipped crash soak kills the real process); each test writes that
 * state, starts Magpie on it and watches what the model is sent, what the tools did and what the chat saw.
 */

let harness: TestApp | undefined;
let llm: OpenAiFake | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
  await llm?.close();
  llm = undefined;
});

const TOOLS = { agents: { main: { toolSet: ["file_append", "file_read", "file_write"] } } };
const HOUR = 3_600_000;

/** A journal step before its time is set (distributed over the kinds). */
type Unstamped<T> = T extends unknown ? Omit<T, "at"> : never;
type StepInput = Unstamped<JournalStep>;

interface CutOff {
  /** How long before the restart the turn started. */
  agoMs?: number;
  steps: StepInput[];
  /** Files in the workspace as the dead process left them. */
  files?: Record<string, string>;
  /** Rows of the approvals table the dead process left. */
  approvals?: string[];
}

/** Starts Magpie once (for its schema), then writes the state a SIGKILL during a turn leaves behind. */
async function crashedDuringTurn(cutOff: CutOff, config: Record<string, unknown> = TOOLS) {
  llm = await startOpenAiFake();
  harness = await startTestApp({ llm, config, features: [securityFeature] });
  const { dataDir } = harness;
  const workspace = harness.config.workspace;
  await harness.stop({ keepData: true, keepLlm: true });
  harness = undefined;
  const store = Store.open(dataDir);
  const at = Date.now() - (cutOff.agoMs ?? 1_000);
  const id = store.inbox.insert(
    {
      channel: "test",
      chatId: "chat-1",
      messageId: "in-crash",
      userId: "u1",
      userName: "U",
      text: "note it down",
      isDirect: true,
      mentionsBot: false,
      attachments: [],
      receivedAt: at,
    },
    "test:chat-1",
    "pending",
  )!;
  store.inbox.setStatus([id], "processing", at);
  for (const step of cutOff.steps) store.journal.append(`inbox:${id}`, { ...step, at });
  for (const approvalId of cutOff.approvals ?? []) {
    store.db
      .prepare(
        `INSERT INTO approvals (id, session_key, channel, chat_id, tool, action, reason, status, requested_at, expires_at)
         VALUES (?, 'test:chat-1', 'test', 'chat-1', 'file_append', 'file_append {}', 'risk:medium', 'pending', ?, ?)`,
      )
      .run(approvalId, at, at + HOUR);
  }
  store.close();
  for (const [name, text] of Object.entries(cutOff.files ?? {}))
    writeFileSync(path.join(workspace, name), text);
  return { dataDir, workspace, inboxId: id };
}

const appendCall = (id: string, line: string) => ({
  id,
  type: "function" as const,
  function: { name: "file_append", arguments: JSON.stringify({ path: "lines.txt", content: `${line}\n` }) },
});
const readCall = (id: string, file: string) => ({
  id,
  type: "function" as const,
  function: { name: "file_read", arguments: JSON.stringify({ path: file }) },
});
const llmStep = (
  ...calls: ReturnType<typeof appendCall>[]
): Unstamped<Extract<JournalStep, { kind: "llm" }>> => ({
  kind: "llm",
  message: { role: "assistant", content: null, tool_calls: calls },
  agent: "main",
  model: "test-model",
});

async function restart(dataDir: string, config: Record<string, unknown> = TOOLS): Promise<TestApp> {
  harness = await startTestApp({ llm: llm!, dataDir, config, features: [securityFeature] });
  return harness;
}

function toolMessages(body: { messages: Array<{ role: string; content?: unknown; tool_call_id?: string }> }) {
  return body.messages.filter((message) => message.role === "tool");
}

describe("step journal: a cut-off turn resumes", () => {
  it("writes each step before the next starts, with its trace row, and drops the journal with the reply", async () => {
    harness = await startTestApp({ config: TOOLS, features: [traceFeature] });
    const { app, channel } = harness;
    let seenAtSecondCall: JournalStep[] = [];
    let traceToolRows = 0;
    harness.llm!.script(
      reply.toolCalls([{ id: "c1", name: "file_append", arguments: { path: "lines.txt", content: "A\n" } }]),
      reply.text("noted", () => {
        seenAtSecondCall = app.store.journal.steps("inbox:1");
        traceToolRows = Number(
          app.store.db.prepare("SELECT count(*) FROM trace_events WHERE kind = 'tool'").pluck().get(),
        );
      }),
    );
    await channel!.receive("note A");
    await channel!.waitForSent(1);
    await app.router.queues.idle();
    expect(seenAtSecondCall.map((step) => step.kind)).toEqual(["llm", "call", "result"]);
    expect(seenAtSecondCall[2]).toMatchObject({ kind: "result", callId: "c1" });
    expect(traceToolRows).toBe(1);
    expect(app.store.journal.steps("inbox:1")).toEqual([]);
    expect(channel!.texts()).toEqual(["noted"]);
  });

  it("killed between a tool's completion and the next LLM call: the call is not run again", async () => {
    const { dataDir, workspace } = await crashedDuringTurn({
      steps: [
        llmStep(appendCall("c1", "A")),
        { kind: "call", callId: "c1" },
        { kind: "result", callId: "c1", output: "Appended 2 bytes to lines.txt." },
      ],
      files: { "lines.txt": "A\n" },
    });
    llm!.script(
      reply.text("noted A", (body) => {
        expect(toolMessages(body)).toEqual([
          { role: "tool", tool_call_id: "c1", content: "Appended 2 bytes to lines.txt." },
        ]);
      }),
    );
    const app = await restart(dataDir);
    await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(app.channel!.texts()).toEqual(["noted A"]);
    expect(readFileSync(path.join(workspace, "lines.txt"), "utf8")).toBe("A\n");
    expect(app.app.store.audit.recent(10).filter((entry) => entry.tool === "file_append")).toEqual([]);
    expect(app.app.store.inbox.countByStatus()).toEqual({ done: 1 });
    expect(app.app.store.inbox.get(1)!.outcome).toBe("answered");
    llm!.assertDone();
  });

  it("killed during a call that is not read-only: the model gets tool.outcome_unknown, the call is not re-run", async () => {
    const { dataDir, workspace } = await crashedDuringTurn({
      steps: [llmStep(appendCall("c1", "A")), { kind: "call", callId: "c1" }],
      files: { "lines.txt": "A\n" },
    });
    llm!.script(
      reply.text("I could not tell whether it was noted; it is there now, checked.", (body) => {
        const [result] = toolMessages(body);
        expect(JSON.parse(String(result!.content))).toMatchObject({
          ok: false,
          error: { code: "tool.outcome_unknown" },
        });
      }),
    );
    const app = await restart(dataDir);
    await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(app.channel!.texts()).toHaveLength(1);
    expect(app.channel!.texts()[0]).not.toContain("interrupted");
    expect(readFileSync(path.join(workspace, "lines.txt"), "utf8")).toBe("A\n");
    llm!.assertDone();
  });

  it("cut off during the same append twice (restarts in a row): asking for it a third time is no loop", async () => {
    // The crash soak under load: each restart resumed the turn just as the next kill came. The model did what it is
    // told to — check, then append again — and the loop guard took the two cut-off appends as the model repeating.
    const { dataDir, workspace } = await crashedDuringTurn({
      steps: [
        llmStep(appendCall("c1", "A")),
        { kind: "call", callId: "c1" },
        { kind: "result", callId: "c1", output: outcomeUnknownText("file_append") },
        llmStep(readCall("r1", "lines.txt")),
        { kind: "call", callId: "r1" },
        { kind: "result", callId: "r1", output: '{"ok":false,"error":{"code":"file.not_found"}}' },
        llmStep(appendCall("c2", "A")),
        { kind: "call", callId: "c2" },
      ],
    });
    llm!.script(
      reply.toolCalls([{ id: "c3", name: "file_append", arguments: { path: "lines.txt", content: "A\n" } }]),
      reply.text("noted A"),
    );
    const app = await restart(dataDir);
    await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(app.channel!.texts()).toEqual(["noted A"]);
    expect(readFileSync(path.join(workspace, "lines.txt"), "utf8")).toBe("A\n");
    expect(app.app.store.inbox.get(1)!.outcome).toBe("answered");
    llm!.assertDone();
  });

  it("the loop guard still counts calls that were answered: a third identical append after two done ones stops", async () => {
    const { dataDir } = await crashedDuringTurn({
      steps: [
        llmStep(appendCall("c1", "A")),
        { kind: "call", callId: "c1" },
        { kind: "result", callId: "c1", output: "Appended 2 bytes to lines.txt." },
        llmStep(appendCall("c2", "A")),
        { kind: "call", callId: "c2" },
        { kind: "result", callId: "c2", output: "Appended 2 bytes to lines.txt." },
      ],
      files: { "lines.txt": "A\nA\n" },
    });
    llm!.script(
      reply.toolCalls([{ id: "c3", name: "file_append", arguments: { path: "lines.txt", content: "A\n" } }]),
    );
    const app = await restart(dataDir);
    const [stopped] = await app.channel!.waitForSent(1);
    expect(stopped!.message.text).toMatch(/came 3 times in this turn/);
    expect(app.app.store.inbox.get(1)).toMatchObject({ outcome: "failed", outcomeCause: "turn.loop" });
    llm!.assertDone();
  });

  it("killed during a read-only call: the call runs again", async () => {
    const { dataDir } = await crashedDuringTurn({
      steps: [llmStep(readCall("c1", "notes.txt")), { kind: "call", callId: "c1" }],
      files: { "notes.txt": "the code is 4711\n" },
    });
    llm!.script(
      reply.text("the code is 4711", (body) => {
        const [result] = toolMessages(body);
        expect(String(result!.content)).toContain("the code is 4711");
      }),
    );
    const app = await restart(dataDir);
    await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(app.channel!.texts()).toEqual(["the code is 4711"]);
    expect(app.app.store.audit.recent(10).map((entry) => entry.tool)).toEqual(["file_read"]);
    llm!.assertDone();
  });

  it("a journal older than agent.resumeWithinSecs: 'interrupted', naming what was already done; nothing re-run", async () => {
    const { dataDir, workspace } = await crashedDuringTurn({
      agoMs: 2 * HOUR,
      steps: [
        llmStep(appendCall("c1", "A"), readCall("c2", "lines.txt")),
        { kind: "call", callId: "c1" },
        { kind: "result", callId: "c1", output: "Appended 2 bytes to lines.txt." },
        { kind: "call", callId: "c2" },
      ],
      files: { "lines.txt": "A\n" },
    });
    const app = await restart(dataDir);
    const [notice] = await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(notice!.message.text).toContain("interrupted");
    expect(notice!.message.text).toContain("file_append (done)");
    expect(notice!.message.text).toContain("file_read (was running; whether it finished is unknown)");
    expect(llm!.requests).toHaveLength(0);
    expect(readFileSync(path.join(workspace, "lines.txt"), "utf8")).toBe("A\n");
    expect(app.app.store.inbox.countByStatus()).toEqual({ interrupted: 1 });
    expect(app.app.store.journal.steps("inbox:1")).toEqual([]);
  });

  it("a turn parked by an outage, found at start-up with a journal older than agent.resumeWithinSecs: 'interrupted', naming what was done; nothing re-run", async () => {
    // The outage limit is longer than the resume limit: only agent.resumeWithinSecs can end this turn at start-up.
    const config = { ...TOOLS, agent: { streaming: false, retryOutageForSecs: 4 * 3600 } };
    const { dataDir, workspace, inboxId } = await crashedDuringTurn(
      {
        agoMs: 2 * HOUR,
        steps: [
          llmStep(appendCall("c1", "A")),
          { kind: "call", callId: "c1" },
          { kind: "result", callId: "c1", output: "Appended 2 bytes to lines.txt." },
        ],
        files: { "lines.txt": "A\n" },
      },
      config,
    );
    // Parked (DESIGN.md → Waiting out an outage): its message back to pending, the chat's outage stored.
    const store = Store.open(dataDir);
    store.inbox.setStatus([inboxId], "pending", Date.now());
    const since = Date.now() - 2 * HOUR;
    store.kv.set("outage:test:chat-1", { since, attempts: 40, retryAt: Date.now() - 1_000 });
    store.close();
    llm!.script(reply.text("answered from a two-hour-old journal"));
    const app = await restart(dataDir, config);
    const [notice] = await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(notice!.message.text).toContain("interrupted");
    expect(notice!.message.text).toContain("file_append (done)");
    expect(llm!.requests).toHaveLength(0);
    expect(readFileSync(path.join(workspace, "lines.txt"), "utf8")).toBe("A\n");
    expect(app.app.store.inbox.get(inboxId)).toMatchObject({
      outcome: "interrupted",
      outcomeCause: "resume.expired",
    });
    expect(app.app.store.journal.steps(`inbox:${inboxId}`)).toEqual([]);
    expect(app.channel!.texts()).toHaveLength(1);
  });

  it("a parked turn with a journal younger than agent.resumeWithinSecs resumes after the restart: the done call is not re-run", async () => {
    const config = { ...TOOLS, agent: { streaming: false } };
    const { dataDir, workspace, inboxId } = await crashedDuringTurn(
      {
        agoMs: 10 * 60_000,
        steps: [
          llmStep(appendCall("c1", "A")),
          { kind: "call", callId: "c1" },
          { kind: "result", callId: "c1", output: "Appended 2 bytes to lines.txt." },
        ],
        files: { "lines.txt": "A\n" },
      },
      config,
    );
    const store = Store.open(dataDir);
    store.inbox.setStatus([inboxId], "pending", Date.now());
    store.kv.set("outage:test:chat-1", {
      since: Date.now() - 10 * 60_000,
      attempts: 20,
      retryAt: Date.now() - 1_000,
    });
    store.close();
    llm!.script(
      reply.text("noted A", (body) => {
        expect(toolMessages(body).map((message) => message.tool_call_id)).toEqual(["c1"]);
      }),
    );
    const app = await restart(dataDir, config);
    await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(app.channel!.texts()).toEqual(["noted A"]);
    expect(readFileSync(path.join(workspace, "lines.txt"), "utf8")).toBe("A\n");
    expect(app.app.store.inbox.get(inboxId)).toMatchObject({ outcome: "answered" });
    llm!.assertDone();
  });

  it("a shorter agent.resumeWithinSecs makes a younger journal too old", async () => {
    const config = { ...TOOLS, agent: { streaming: false, resumeWithinSecs: 60 } };
    const { dataDir } = await crashedDuringTurn(
      { agoMs: 5 * 60_000, steps: [llmStep(appendCall("c1", "A")), { kind: "call", callId: "c1" }] },
      config,
    );
    const app = await restart(dataDir, config);
    const [notice] = await app.channel!.waitForSent(1);
    expect(notice!.message.text).toContain("file_append (was running; whether it finished is unknown)");
    expect(llm!.requests).toHaveLength(0);
  });

  it("a turn whose model is gone (another /model now) is not resumed: 'interrupted', naming what was done", async () => {
    const { dataDir } = await crashedDuringTurn({
      steps: [
        { ...llmStep(appendCall("c1", "A")), model: "retired-model" },
        { kind: "call", callId: "c1" },
        { kind: "result", callId: "c1", output: "Appended 2 bytes to lines.txt." },
      ],
    });
    const app = await restart(dataDir);
    const [notice] = await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(notice!.message.text).toContain("interrupted");
    expect(notice!.message.text).toContain("file_append (done)");
    expect(llm!.requests).toHaveLength(0);
    expect(app.app.store.inbox.get(1)).toMatchObject({
      outcome: "interrupted",
      outcomeCause: "resume.model_gone",
    });
  });

  it("two cut-off runs in one chat (a restart took a new message and died before recovering the older one): both journals replay, nothing re-runs", async () => {
    const { dataDir, workspace } = await crashedDuringTurn({
      steps: [
        llmStep(appendCall("c1", "A")),
        { kind: "call", callId: "c1" },
        { kind: "result", callId: "c1", output: "Appended 2 bytes to lines.txt." },
      ],
      files: { "lines.txt": "A\nB\n" },
    });
    // The first run's message was set back to pending by a recovery that was killed before it ran again; a newer
    // message's run journaled its own append before that process died too.
    const store = Store.open(dataDir);
    store.inbox.setStatus([1], "pending", Date.now());
    const at = Date.now() - 500;
    const second = store.inbox.insert(
      {
        channel: "test",
        chatId: "chat-1",
        messageId: "in-crash-2",
        userId: "u1",
        userName: "U",
        text: "and B",
        isDirect: true,
        mentionsBot: false,
        attachments: [],
        receivedAt: at,
      },
      "test:chat-1",
      "pending",
    )!;
    store.inbox.setStatus([second], "processing", at);
    for (const step of [
      llmStep(appendCall("c2", "B")),
      { kind: "call" as const, callId: "c2" },
      { kind: "result" as const, callId: "c2", output: "Appended 2 bytes to lines.txt (B)." },
    ])
      store.journal.append(`inbox:${second}`, { ...step, at });
    store.close();
    llm!.script(
      reply.text("noted A and B", (body) => {
        expect(toolMessages(body).map((message) => message.tool_call_id)).toEqual(["c1", "c2"]);
      }),
    );
    const app = await restart(dataDir);
    await app.channel!.waitForSent(1);
    await app.app.router.queues.idle();
    expect(app.channel!.texts()).toEqual(["noted A and B"]);
    expect(readFileSync(path.join(workspace, "lines.txt"), "utf8")).toBe("A\nB\n");
    expect(app.app.store.audit.recent(10)).toEqual([]);
    expect(app.app.store.db.prepare("SELECT count(*) FROM turn_steps").pluck().get()).toBe(0);
    llm!.assertDone();
  });

  it("a pending approval is asked again under the same id, decided once, and the call runs once", async () => {
    const config = { ...TOOLS, security: { approvals: { require: ["file_append"], timeoutSecs: 30 } } };
    const { dataDir, workspace } = await crashedDuringTurn(
      {
        steps: [
          llmStep(appendCall("c1", "A")),
          { kind: "call", callId: "c1" },
          { kind: "approval", callId: "c1", approvalId: "ab12cd34" },
        ],
        approvals: ["ab12cd34"],
      },
      config,
    );
    llm!.script(
      reply.text("noted A", (body) => {
        expect(String(toolMessages(body)[0]!.content)).toContain("lines.txt");
      }),
    );
    const app = await restart(dataDir, config);
    const [prompt] = await app.channel!.waitForSent(1);
    expect(prompt!.message.text).toContain("ab12cd34");
    expect(prompt!.message.buttons![0]![0]!.id).toBe("approve:ab12cd34");
    await app.channel!.press({ buttonId: "approve:ab12cd34" });
    await app.channel!.waitForSent(3);
    await app.app.router.queues.idle();
    expect(app.channel!.texts()).toContain("noted A");
    expect(readFileSync(path.join(workspace, "lines.txt"), "utf8")).toBe("A\n");
    // Decided once: a second press is refused.
    await app.channel!.press({ buttonId: "deny:ab12cd34" });
    const last = (await app.channel!.waitForSent(4)).at(-1)!;
    expect(last.message.text).toMatch(/already (approved|closed)/);
    llm!.assertDone();
  });
});
