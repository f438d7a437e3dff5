import { afterEach, describe, expect, it } from "vitest";
import { INTERRUPTED_REPLY } from "../../src/core/no-llm.js";
import { ChannelSendError } from "../../src/lib/errors.js";
import { Store } from "../../src/store/index.js";
import { reply, startOpenAiFake } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe("durability", () => {
  it("answers a redelivered message (same channel + messageId) only once", async () => {
    harness = await startTestApp();
    const { llm, channel } = harness;
    llm!.script(reply.text("hello once"));
    const first = await channel!.receive("hi", { messageId: "42" });
    const again = await channel!.receive("hi", { messageId: "42" });
    expect(first.status).toBe("accepted");
    expect(again).toEqual({ status: "duplicate" });
    await channel!.waitForSent(1);
    await harness.app.router.queues.idle();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(channel!.texts()).toEqual(["hello once"]);
    llm!.assertDone();
  });

  it("retries a failed send with back-off and delivers it exactly once", async () => {
    harness = await startTestApp({ llm: false });
    const { channel, app } = harness;
    // The outbox worker's default back-off starts at 1 s; a 429 with retry-after 0 retries at once.
    channel!.failNext(new ChannelSendError("429 Too Many Requests", { retryAfterMs: 0 }), 2);
    const id = app.router.send({ channel: "test", chatId: "c1" }, { text: "report" });
    await channel!.waitForSent(1);
    const item = app.store.outbox.get(id)!;
    expect(item.status).toBe("sent");
    expect(item.attempts).toBe(3);
    expect(item.platformMessageIds).toEqual([channel!.sent[0]!.id]);
    expect(channel!.texts()).toEqual(["report"]);
  });

  it("marks a permanently rejected send failed without retrying", async () => {
    harness = await startTestApp({ llm: false });
    const { channel, app } = harness;
    channel!.failNext(new ChannelSendError("400 chat not found", { permanent: true }));
    const id = app.router.send({ channel: "test", chatId: "gone" }, { text: "x" });
    const status = await app.context.messenger.waitForDelivery(id, 2_000);
    expect(status).toBe("failed");
    expect(app.store.outbox.get(id)).toMatchObject({
      status: "failed",
      attempts: 1,
      lastError: "400 chat not found",
    });
  });

  it("resumes a multi-part send after the last delivered part", async () => {
    harness = await startTestApp({ llm: false });
    const { app } = harness;
    const parts: string[] = [];
    let failOnce = true;
    const chunky = new RecordingChannel("chunky");
    chunky.send = async (_target, message, progress) => {
      const chunks = message.text.split("|");
      const ids: string[] = [];
      for (let index = progress?.partsSent ?? 0; index < chunks.length; index++) {
        if (index === 1 && failOnce) {
          failOnce = false;
          throw new ChannelSendError("network down", { retryAfterMs: 0 });
        }
        parts.push(chunks[index]!);
        ids[index] = `p${index}`;
        progress?.onPartSent(index, `p${index}`);
      }
      return { messageIds: ids };
    };
    await chunky.start(app.router);
    (app.adapters as Map<string, RecordingChannel>).set("chunky", chunky);
    const id = app.router.send({ channel: "chunky", chatId: "c" }, { text: "one|two|three" });
    expect(await app.context.messenger.waitForDelivery(id, 3_000)).toBe("sent");
    expect(parts).toEqual(["one", "two", "three"]);
    expect(app.store.outbox.get(id)!.platformMessageIds).toEqual(["p0", "p1", "p2"]);
  });

  it("after a crash: answers messages never started, resumes a cut-off turn, reports one too old to resume, sends pending replies — once each", async () => {
    const llm = await startOpenAiFake();
    harness = await startTestApp({ llm });
    const dataDir = harness.dataDir;
    await harness.stop({ keepData: true });
    harness = undefined;

    // Simulate the state a crash leaves behind, directly in the database.
    const store = Store.open(dataDir);
    const base = {
      channel: "test",
      chatId: "chat-1",
      userId: "u",
      userName: "U",
      isDirect: true,
      mentionsBot: false,
      attachments: [],
      receivedAt: Date.now(),
    };
    store.inbox.insert(
      { ...base, messageId: "never-started", text: "please answer" },
      "test:chat-1",
      "pending",
    );
    store.inbox.insert(
      { ...base, chatId: "chat-2", messageId: "was-running", text: "long job" },
      "test:chat-2",
      "processing",
    );
    // Cut off two hours ago: older than agent.resumeWithinSecs (3600), so it cannot resume.
    const old = Date.now() - 2 * 3_600_000;
    const stale = store.inbox.insert(
      { ...base, chatId: "chat-4", messageId: "long-ago", text: "old job", receivedAt: old },
      "test:chat-4",
      "pending",
    )!;
    store.inbox.setStatus([stale], "processing", old);
    store.outbox.enqueue({ channel: "test", chatId: "chat-3" }, { text: "queued before the crash" });
    store.close();

    llm.script(reply.text("answer after restart"), reply.text("answer after restart"));
    harness = await startTestApp({ llm, dataDir });
    const channel = harness.channel!;
    await channel.waitForSent(4);
    await harness.app.router.queues.idle();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const byChat = Object.fromEntries(channel.sent.map((entry) => [entry.target.chatId, entry.message.text]));
    expect(byChat).toEqual({
      "chat-1": "answer after restart",
      "chat-2": "answer after restart",
      "chat-3": "queued before the crash",
      "chat-4": INTERRUPTED_REPLY,
    });
    expect(channel.sent).toHaveLength(4);
    expect(INTERRUPTED_REPLY).toContain("interrupted");
    llm.assertDone();

    // A second restart finds nothing left to do: no doubled replies.
    await harness.stop({ keepData: true, keepLlm: true });
    harness = await startTestApp({ llm, dataDir });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(harness.channel!.sent).toHaveLength(0);
    expect(harness.app.store.inbox.countByStatus()).toEqual({ done: 2, interrupted: 1 });
    await llm.close();
  });

  it("after a crash with hundreds of queued messages in one chat: the cut-off turn resumes with those behind it, one answer", async () => {
    const llm = await startOpenAiFake();
    harness = await startTestApp({ llm });
    const dataDir = harness.dataDir;
    await harness.stop({ keepData: true });
    harness = undefined;

    // The state a SIGKILL leaves: a turn holding 299 collected messages was running, 120 more waited behind it.
    const store = Store.open(dataDir);
    const base = {
      channel: "test",
      chatId: "busy",
      userId: "u",
      userName: "U",
      isDirect: true,
      mentionsBot: false,
      attachments: [],
      receivedAt: Date.now(),
    };
    for (let index = 0; index < 299; index++)
      store.inbox.insert(
        { ...base, messageId: `running-${index}`, text: `r${index}` },
        "test:busy",
        "processing",
      );
    for (let index = 0; index < 120; index++)
      store.inbox.insert(
        { ...base, messageId: `waiting-${index}`, text: `w${index}` },
        "test:busy",
        "pending",
      );
    store.close();

    llm.script(reply.text("all 419 answered"));
    harness = await startTestApp({ llm, dataDir });
    const channel = harness.channel!;
    await channel.waitForSent(1);
    await harness.app.router.queues.idle();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(channel.texts()).toEqual(["all 419 answered"]);
    // The cut-off turn (it had journaled nothing: no tool call had started) and the 120 waiting messages went to
    // the model together, in one turn.
    expect(llm.requests).toHaveLength(1);
    const prompt = JSON.stringify(llm.requests[0]!.messages);
    expect(prompt).toContain("r0");
    expect(prompt).toContain("w0");
    expect(prompt).toContain("w119");
    llm.assertDone();
    expect(harness.app.store.inbox.countByStatus()).toEqual({ done: 419 });
    await llm.close();
  });

  it("a message queued twice (it arrived while start-up recovery ran) is answered once", async () => {
    harness = await startTestApp();
    const { llm, channel, app } = harness;
    llm!.script(reply.text("answered once"));
    const accepted = await channel!.receive("hello", { chatId: "twice", messageId: "t1" });
    if (accepted.status !== "accepted") throw new Error("not accepted");
    // The recovery queues the same unfinished message the intake already queued.
    app.router.queues.enqueue("test:twice", accepted.inboxId);
    await channel!.waitForSent(1);
    await app.router.queues.idle();
    app.router.queues.enqueue("test:twice", accepted.inboxId);
    await app.router.queues.idle();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(channel!.texts()).toEqual(["answered once"]);
    expect(app.store.db.prepare("SELECT status FROM inbox WHERE id = ?").pluck().get(accepted.inboxId)).toBe(
      "done",
    );
    llm!.assertDone();
  });

  it("a message waiting for a turn slot is not marked started (a crash then answers it instead of 'interrupted')", async () => {
    harness = await startTestApp({ config: { agent: { maxConcurrentTurns: 1 } } });
    const { llm, channel, app } = harness;
    llm!.script(reply.delay(400, reply.text("A done")), reply.text("B done"));
    await channel!.receive("slow one", { chatId: "chat-a", messageId: "a1" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await channel!.receive("waiting one", { chatId: "chat-b", messageId: "b1" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const status = (messageId: string) =>
      app.store.db.prepare("SELECT status FROM inbox WHERE message_id = ?").pluck().get(messageId);
    expect(status("a1")).toBe("processing");
    expect(status("b1")).toBe("pending");
    await channel!.waitForSent(2);
    expect(status("b1")).toBe("done");
    llm!.assertDone();
  });

  it("checkpoints a turn cut off by shutdown and re-runs it after the restart", async () => {
    const llm = await startOpenAiFake();
    harness = await startTestApp({ llm });
    const dataDir = harness.dataDir;
    llm.script(reply.hang());
    await harness.channel!.receive("slow question");
    await new Promise((resolve) => setTimeout(resolve, 100));
    await harness.stop({ keepData: true, keepLlm: true });
    harness = undefined;

    llm.script(reply.text("answered after restart"));
    harness = await startTestApp({ llm, dataDir });
    await harness.channel!.waitForSent(1);
    expect(harness.channel!.texts()).toEqual(["answered after restart"]);
    llm.assertDone();
    await llm.close();
  });
});
