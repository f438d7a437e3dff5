import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Store } from "../../src/store/index.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { reply, startOpenAiFake } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * DESIGN.md → Message flow → Waiting out an outage, in-process (the shipped build's run is
 * test/shipped/outage.test.ts): a turn whose every model fails for a reason that passes is parked with one notice
 * and answered once the model is back; past `agent.retryOutageForSecs` it fails with a second notice.
 */
let harness: TestApp | undefined;
const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
  for (const task of cleanup.splice(0).reverse()) await task();
});

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const NOTICE = /^The model is unreachable — I'll answer when it's back/;
/** 120 s: the back-off between tries is its 60th at most, 2 s. */
const WAITING = { agent: { retryOutageForSecs: 120 } };

function inboxIdOf(result: Awaited<ReturnType<NonNullable<TestApp["channel"]>["receive"]>>): number {
  if (result.status !== "accepted") throw new Error(`not accepted: ${result.status}`);
  return result.inboxId;
}

describe("waiting out an LLM outage", () => {
  it("parks the turn with one notice and answers it once the model is back (outcome answered, the wait traced)", async () => {
    harness = await startTestApp({ config: WAITING });
    const { llm, channel, app } = harness;
    llm!.script(reply.error(503, "overloaded"), reply.error(502, "bad gateway"), reply.text("Back: 42."));
    const id = inboxIdOf(await channel!.receive("what is 6 x 7?"));
    await channel!.waitForSent(2, 15_000);
    expect(channel!.texts()[0]).toMatch(NOTICE);
    expect(channel!.texts()[1]).toBe("Back: 42.");
    llm!.assertDone();
    const item = app.store.inbox.get(id)!;
    expect(item.outcome).toBe("answered");
    expect(item.outcomeCause).toMatch(/^after waiting \d+ s for the model \(2 failed tries\)$/);
    // Nothing else was sent, and the chat's outage is closed.
    await app.outbox.flush(1_000);
    expect(channel!.sent).toHaveLength(2);
    expect(app.store.kv.has("outage:test:chat-1")).toBe(false);
    // The history holds the question once (the failed tries added nothing).
    const history = app.store.history.newest("test:chat-1", 10_000).messages.map((entry) => entry.message);
    expect(history.filter((message) => message.role === "user")).toHaveLength(1);
  }, 20_000);

  it("a later message of the chat waits behind the parked turn and is answered after it, in order; one notice", async () => {
    harness = await startTestApp({ config: WAITING });
    const { llm, channel } = harness;
    llm!.script(
      reply.error(503),
      reply.error(503),
      reply.text("answer one", (body) => expect(JSON.stringify(body.messages)).not.toContain("second")),
      reply.text("answer two"),
    );
    await channel!.receive("first");
    await channel!.waitForSent(1);
    await channel!.receive("second");
    await channel!.waitForSent(3, 15_000);
    expect(channel!.texts()).toEqual([expect.stringMatching(NOTICE), "answer one", "answer two"]);
    llm!.assertDone();
  }, 20_000);

  it("an answer in another chat ends every parked chat's wait at once", async () => {
    harness = await startTestApp({ config: { agent: { retryOutageForSecs: 3600 } } });
    const { llm, channel, app } = harness;
    llm!.script(
      reply.error(503),
      reply.error(503),
      reply.text("other chat answered"),
      reply.text("parked one answered"),
    );
    await channel!.receive("first", { chatId: "chat-A" });
    // Two failed tries: the next one is 3.2-4 s away.
    const outage = () =>
      app.store.kv.get("outage:test:chat-A", z.object({ attempts: z.number(), retryAt: z.number() }));
    await until(() => outage()?.attempts === 2);
    const nextTry = outage()!.retryAt;
    await channel!.receive("hello", { chatId: "chat-B" });
    await until(() => channel!.texts().includes("parked one answered"));
    // Before its own next try: woken by chat-B's answer.
    expect(Date.now()).toBeLessThan(nextTry);
    expect(channel!.texts()).toEqual([
      expect.stringMatching(NOTICE),
      "other chat answered",
      "parked one answered",
    ]);
  });

  it("past agent.retryOutageForSecs the turn fails with a second notice", async () => {
    harness = await startTestApp({ config: { agent: { retryOutageForSecs: 3 } } });
    const { llm, channel, app } = harness;
    llm!.script(reply.error(503), reply.error(503), reply.error(503));
    const id = inboxIdOf(await channel!.receive("anyone there?"));
    await until(() => app.store.inbox.get(id)?.outcome === "failed");
    await channel!.waitForSent(2);
    const [notice, failed] = channel!.texts();
    expect(notice).toMatch(NOTICE);
    expect(failed).toMatch(
      /^The model is still unreachable after \d+ s and 3 tries \(agent\.retryOutageForSecs\)/,
    );
    expect(failed).toMatch(/internal error \(HTTP 503\)/);
    expect(app.store.inbox.get(id)!.outcomeCause).toMatch(/^llm\.server_error \(waited \d+ s\)$/);
    llm!.assertDone();
  }, 15_000);

  it("/stop drops a parked turn with a clear reply; it is never answered", async () => {
    harness = await startTestApp({ config: WAITING });
    const { llm, channel, app } = harness;
    llm!.script(reply.error(503));
    const id = inboxIdOf(await channel!.receive("long question"));
    await channel!.waitForSent(1);
    await until(() => app.router.chats.isParked("test:chat-1"));
    await channel!.receive("/stop");
    await channel!.waitForSent(2);
    expect(channel!.texts()[1]).toBe(
      "Stopped (and dropped your message that was waiting for the model; it won't be answered).",
    );
    await until(() => app.store.inbox.get(id)?.outcome === "interrupted");
    expect(app.store.inbox.get(id)!.status).toBe("done");
    // The back-off (2 s) passes: no further try.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(llm!.requests).toHaveLength(1);
    llm!.assertDone();
  });

  it("/reset drops a parked turn and says so", async () => {
    harness = await startTestApp({ config: WAITING });
    const { llm, channel, app } = harness;
    llm!.script(reply.error(503));
    await channel!.receive("long question");
    await until(() => app.router.chats.isParked("test:chat-1"));
    await channel!.receive("/reset");
    await channel!.waitForSent(2);
    expect(channel!.texts()[1]).toBe(
      "Conversation history cleared, and dropped your message that was waiting for the model; it won't be answered. Long-term memory is kept.",
    );
    expect(app.router.chats.isParked("test:chat-1")).toBe(false);
  });

  it("a budget reached while the turn waited is checked again before the retry", async () => {
    harness = await startTestApp({
      config: { ...WAITING, budgets: { daily: { tokens: 20 } } },
      features: [(await import("../../src/app/usage-feature.js")).usageFeature],
    });
    const { llm, channel, app } = harness;
    // chat-A is parked; chat-B's answer spends the day's tokens and wakes chat-A, whose retry is refused.
    llm!.script(reply.error(503), reply.text("spent it all"));
    const parked = inboxIdOf(await channel!.receive("first", { chatId: "chat-A" }));
    await until(() => app.router.chats.isParked("test:chat-A"));
    await channel!.receive("spend", { chatId: "chat-B" });
    await until(() => app.store.inbox.get(parked)?.outcome === "failed");
    expect(app.store.inbox.get(parked)!.outcomeCause).toBe("budget.exceeded");
    expect(llm!.requests).toHaveLength(2);
  });

  it("an outage with a rejected key among the models is not waited out (a person must fix the key)", async () => {
    const fallback = await startOpenAiFake();
    cleanup.push(() => fallback.close());
    harness = await startTestApp({
      config: { ...WAITING, llm: { fallbacks: [{ model: "fb", baseUrl: fallback.url, apiKey: "sk-fb" }] } },
    });
    const { llm, channel, app } = harness;
    llm!.script(reply.error(401, "invalid key"));
    fallback.script(reply.error(503));
    const id = inboxIdOf(await channel!.receive("hi"));
    await until(() => app.store.inbox.get(id)?.outcome === "failed");
    expect(app.store.inbox.get(id)!.outcomeCause).toBe("llm.all_failed");
    expect(channel!.texts()).toHaveLength(1);
    expect(channel!.texts()[0]).toMatch(/^All configured models failed/);
  });

  describe("a turn whose side-effecting tool already ran (parked with its step journal)", () => {
    /** A side-effecting tool that counts its runs (the file soak's `file_append`, in-process). */
    function appendTool() {
      const runs = { count: 0 };
      const tool = defineTool({
        name: "append_line",
        description: "appends a line",
        inputSchema: z.object({}),
        risk: "low",
        execute: () => {
          runs.count++;
          return "appended";
        },
      });
      return { runs, tool };
    }
    const journalRows = (app: TestApp["app"]) =>
      app.store.db.prepare("SELECT count(*) FROM turn_steps").pluck().get() as number;

    it("waits the outage out and resumes after the call: it never runs again; one notice, one answer", async () => {
      const { runs, tool } = appendTool();
      harness = await startTestApp({
        config: { ...WAITING, agents: { main: { toolSet: ["append_line"] } } },
        extraTools: [tool],
      });
      const { llm, channel, app } = harness;
      llm!.script(
        reply.toolCalls([{ id: "call-1", name: "append_line", arguments: {} }]),
        reply.error(503),
        reply.error(502),
        // The retry resumes from the journal: the model sees the call and its result, as before the outage.
        reply.text("Appended it.", (body) => {
          const tool = body.messages.filter((message) => message.role === "tool");
          expect(tool).toEqual([expect.objectContaining({ tool_call_id: "call-1", content: "appended" })]);
        }),
      );
      const id = inboxIdOf(await channel!.receive("append"));
      await channel!.waitForSent(2, 15_000);
      expect(channel!.texts()).toEqual([expect.stringMatching(NOTICE), "Appended it."]);
      expect(runs.count).toBe(1);
      llm!.assertDone();
      const item = app.store.inbox.get(id)!;
      expect(item.outcome).toBe("answered");
      expect(item.outcomeCause).toMatch(/^after waiting \d+ s for the model \(2 failed tries\)$/);
      // The journal went with the reply; the history holds the tool round once.
      expect(journalRows(app)).toBe(0);
      const history = app.store.history.newest("test:chat-1", 10_000).messages.map((entry) => entry.message);
      expect(history.filter((message) => message.role === "tool")).toHaveLength(1);
      await app.outbox.flush(1_000);
      expect(channel!.sent).toHaveLength(2);
    }, 20_000);

    it("past agent.retryOutageForSecs it fails; the second notice names the call already done", async () => {
      const { runs, tool } = appendTool();
      harness = await startTestApp({
        config: { agent: { retryOutageForSecs: 3 }, agents: { main: { toolSet: ["append_line"] } } },
        extraTools: [tool],
      });
      const { llm, channel, app } = harness;
      llm!.script(
        reply.toolCalls([{ name: "append_line", arguments: {} }]),
        reply.error(503),
        reply.error(503),
        reply.error(503),
      );
      const id = inboxIdOf(await channel!.receive("append"));
      await until(() => app.store.inbox.get(id)?.outcome === "failed");
      await channel!.waitForSent(2);
      const [notice, failed] = channel!.texts();
      expect(notice).toMatch(NOTICE);
      expect(failed).toMatch(/^The model is still unreachable after \d+ s and 3 tries/);
      expect(failed).toContain("Already done before the model went away: append_line (done).");
      expect(app.store.inbox.get(id)!.outcomeCause).toMatch(/^llm\.server_error \(waited \d+ s\)$/);
      expect(runs.count).toBe(1);
      expect(journalRows(app)).toBe(0);
      llm!.assertDone();
    }, 15_000);

    it("/stop drops it, and its journal with it", async () => {
      const { runs, tool } = appendTool();
      harness = await startTestApp({
        config: { ...WAITING, agents: { main: { toolSet: ["append_line"] } } },
        extraTools: [tool],
      });
      const { llm, channel, app } = harness;
      llm!.script(reply.toolCalls([{ name: "append_line", arguments: {} }]), reply.error(503));
      const id = inboxIdOf(await channel!.receive("append"));
      await until(() => app.router.chats.isParked("test:chat-1"));
      expect(journalRows(app)).toBeGreaterThan(0);
      await channel!.receive("/stop");
      await until(() => app.store.inbox.get(id)?.outcome === "interrupted");
      expect(journalRows(app)).toBe(0);
      expect(runs.count).toBe(1);
      llm!.assertDone();
      // ATTACK: the append it did stays in history (call and result): the next request knows it took effect.
      const history = app.store.history.newest("test:chat-1", 10_000).messages.map((entry) => entry.message);
      expect(history.map((message) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      expect(history[1]).toMatchObject({ tool_calls: [{ function: { name: "append_line" } }] });
    });

    it("ATTACK: /stop of a turn parked before a restart keeps the tool round its journal holds in history", async () => {
      const { runs, tool } = appendTool();
      const config = { ...WAITING, agents: { main: { toolSet: ["append_line"] } } };
      harness = await startTestApp({ config, extraTools: [tool] });
      const { llm, channel, app } = harness;
      llm!.script(reply.toolCalls([{ id: "call-1", name: "append_line", arguments: {} }]), reply.error(503));
      const id = inboxIdOf(await channel!.receive("append a line"));
      await until(() => app.router.chats.isParked("test:chat-1"));
      await channel!.waitForSent(1);
      const { dataDir } = harness;
      await harness.stop({ keepData: true, keepLlm: true });
      // The next try is a minute away (a longer back-off): the restarted bot waits with the journal alone.
      const store = Store.open(dataDir);
      const outage = store.kv.get("outage:test:chat-1", z.looseObject({}));
      store.kv.set("outage:test:chat-1", { ...outage, retryAt: Date.now() + 60_000 });
      store.close();
      harness = await startTestApp({ llm: llm!, dataDir, config, extraTools: [tool] });
      await until(() => harness!.app.router.chats.isParked("test:chat-1"));
      // (A new process's test channel counts its message ids from 1 again.)
      await harness.channel!.receive("/stop", { messageId: "after-restart-1" });
      await until(() => harness!.app.store.inbox.get(id)?.outcome === "interrupted");
      expect(runs.count).toBe(1);
      expect(journalRows(harness.app)).toBe(0);
      llm!.assertDone();
      // The append it did stays in history (call and result): the next request knows it took effect.
      const history = harness.app.store.history
        .newest("test:chat-1", 10_000)
        .messages.map((entry) => entry.message);
      expect(history.map((message) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      expect(history[0]).toMatchObject({ content: expect.stringContaining("append a line") });
      expect(history[1]).toMatchObject({ tool_calls: [{ id: "call-1", function: { name: "append_line" } }] });
      expect(history[2]).toMatchObject({ tool_call_id: "call-1", content: "appended" });
    }, 20_000);

    it("a restart while parked keeps the journal: the retry resumes after the call, no second notice", async () => {
      const { runs, tool } = appendTool();
      const config = { ...WAITING, agents: { main: { toolSet: ["append_line"] } } };
      harness = await startTestApp({ config, extraTools: [tool] });
      const { llm, channel, app } = harness;
      llm!.script(reply.toolCalls([{ id: "call-1", name: "append_line", arguments: {} }]), reply.error(503));
      const id = inboxIdOf(await channel!.receive("append"));
      await until(() => app.router.chats.isParked("test:chat-1"));
      await channel!.waitForSent(1);
      const { dataDir } = harness;
      await harness.stop({ keepData: true, keepLlm: true });
      harness = await startTestApp({ llm: llm!, dataDir, config, extraTools: [tool] });
      llm!.script(
        reply.text("Appended it.", (body) =>
          expect(body.messages.filter((message) => message.role === "tool")).toHaveLength(1),
        ),
      );
      await harness.channel!.waitForSent(1, 15_000);
      expect(harness.channel!.texts()).toEqual(["Appended it."]);
      expect(runs.count).toBe(1);
      expect(harness.app.store.inbox.get(id)!.outcome).toBe("answered");
      expect(journalRows(harness.app)).toBe(0);
      llm!.assertDone();
    }, 20_000);
  });
});
