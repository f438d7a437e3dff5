import { afterEach, describe, expect, it } from "vitest";
import { usageFeature } from "../../src/app/usage-feature.js";
import { type EventBase, magpieEvents } from "../../src/core/events.js";
import { ChannelSendError } from "../../src/lib/errors.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";
import { testToolNames, testTools } from "../helpers/test-tools.js";

let harness: TestApp | undefined;
const unsubscribes: Array<() => void> = [];
afterEach(async () => {
  for (const unsubscribe of unsubscribes.splice(0)) unsubscribe();
  await harness?.stop();
  harness = undefined;
});

const withTools = { agents: { main: { toolSet: testToolNames } } };

/** Records every event the app publishes, as `[channel key, event]`. */
function record(app: string): Array<[string, EventBase & Record<string, unknown>]> {
  const seen: Array<[string, EventBase & Record<string, unknown>]> = [];
  for (const [key, channel] of Object.entries(magpieEvents)) {
    unsubscribes.push(
      (channel as (typeof magpieEvents)["turnStarted"]).subscribe(app, (event) =>
        seen.push([key, event as unknown as EventBase & Record<string, unknown>]),
      ),
    );
  }
  return seen;
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("message outcomes and the core's events", () => {
  it("publishes a turn's life: access, received, turn, LLM calls, tool call, delivery, outcome answered", async () => {
    harness = await startTestApp({
      extraTools: testTools,
      features: [usageFeature],
      config: { ...withTools, llm: { prices: { "test-model": { input: 1, output: 2 } } } },
    });
    const { llm, channel, app } = harness;
    const seen = record(app.events.app);
    llm!.script(reply.toolCalls([{ name: "add_numbers", arguments: { a: 2, b: 3 } }]), reply.text("5."));
    const accepted = await channel!.receive("what is 2+3?");
    const inboxId = accepted.status === "accepted" ? accepted.inboxId : -1;
    await channel!.waitForSent(1);
    await until(() => seen.some(([key]) => key === "messageOutcome"));
    await until(() => seen.some(([key]) => key === "delivery"));

    const keys = seen.map(([key]) => key);
    expect(keys).toEqual([
      "accessDecided",
      "messageReceived",
      "turnStarted",
      "llmCall",
      "toolCall",
      "llmCall",
      "turnFinished",
      "messageOutcome",
      "delivery",
    ]);
    const byKey = (key: string) => seen.filter(([k]) => k === key).map(([, event]) => event);
    expect(byKey("accessDecided")[0]).toMatchObject({
      verdict: "allowed",
      channel: "test",
      chatId: "chat-1",
    });
    expect(byKey("messageReceived")[0]).toMatchObject({ inboxId, textChars: 12 });
    expect(byKey("turnStarted")[0]).toMatchObject({ turnId: `inbox:${inboxId}`, inboxIds: [inboxId] });
    expect(byKey("llmCall")[0]).toMatchObject({
      turnId: `inbox:${inboxId}`,
      kind: "chat",
      model: "test-model",
      result: "ok",
    });
    expect(byKey("llmCall")[0]!.costUsd).toBeGreaterThan(0);
    expect(byKey("toolCall")[0]).toMatchObject({ tool: "add_numbers", verdict: "allow", ok: true });
    expect(byKey("turnFinished")[0]).toMatchObject({ status: "ok", iterations: 2, toolCalls: 1 });
    expect(byKey("delivery")[0]).toMatchObject({ status: "sent", inboxId, platformMessageIds: ["m2"] });
    expect(byKey("messageOutcome")[0]).toMatchObject({ inboxIds: [inboxId], outcome: "answered" });
    for (const [, event] of seen) expect(event.app).toBe(app.events.app);
    expect(app.store.inbox.get(inboxId)).toMatchObject({ outcome: "answered", outcomeCause: null });
  });

  it("a turn whose LLM is down ends failed, and the chat is told the cause", async () => {
    harness = await startTestApp();
    const { llm, channel, app } = harness;
    const seen = record(app.events.app);
    llm!.script(reply.error(503, "upstream down"));
    const accepted = await channel!.receive("hello?");
    const inboxId = accepted.status === "accepted" ? accepted.inboxId : -1;
    const [notice] = await channel!.waitForSent(1);
    expect(notice!.message.text).toMatch(/language model/i);
    expect(app.store.inbox.get(inboxId)).toMatchObject({ outcome: "failed", status: "done" });
    expect(app.store.inbox.get(inboxId)!.outcomeCause).toMatch(/llm\./);
    const failedCall = seen.find(([key]) => key === "llmCall")?.[1];
    expect(failedCall).toMatchObject({ result: "error", turnId: `inbox:${inboxId}` });
  });

  it("a turn that crashes inside Magpie ends failed with a notice, never silence", async () => {
    harness = await startTestApp();
    const { llm, channel, app } = harness;
    llm!.script(reply.text("never stored"));
    // History that can't be written: the turn's closing transaction throws.
    app.store.db.exec(
      "CREATE TRIGGER no_history BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'disk says no'); END",
    );
    const accepted = await channel!.receive("hello?");
    const inboxId = accepted.status === "accepted" ? accepted.inboxId : -1;
    const [notice] = await channel!.waitForSent(1);
    expect(notice!.message.text).toContain("Something went wrong inside Magpie");
    expect(notice!.message.text).toContain("disk says no");
    expect(app.store.inbox.get(inboxId)).toMatchObject({
      outcome: "failed",
      outcomeCause: "turn.crashed",
      status: "done",
    });
  });

  it("a reply the platform refuses for good ends undeliverable after one attempt (no retry storm)", async () => {
    harness = await startTestApp();
    const { llm, channel, app } = harness;
    llm!.script(reply.text("you blocked me"));
    channel!.failNext(
      new ChannelSendError("Forbidden: bot was blocked by the user", {
        permanent: true,
        code: "channel.403",
      }),
      1,
    );
    const accepted = await channel!.receive("hello?");
    const inboxId = accepted.status === "accepted" ? accepted.inboxId : -1;
    await until(() => app.store.inbox.get(inboxId)?.outcome === "undeliverable");
    const item = app.store.db.prepare("SELECT status, attempts FROM outbox WHERE inbox_id = ?").get(inboxId);
    expect(item).toEqual({ status: "failed", attempts: 1 });
    expect(app.store.inbox.get(inboxId)!.outcomeCause).toContain("bot was blocked");
  });

  it("/stop interrupts the running turn and what waited behind it", async () => {
    harness = await startTestApp({ extraTools: testTools, config: withTools });
    const { llm, channel, app } = harness;
    llm!.script(reply.toolCalls([{ name: "slow", arguments: { ms: 10_000 } }]));
    const first = await channel!.receive("take your time");
    await until(
      () => app.store.inbox.get(first.status === "accepted" ? first.inboxId : -1)?.status === "processing",
    );
    const second = await channel!.receive("and this too");
    await channel!.receive("/stop");
    const ids = [first, second].map((result) => (result.status === "accepted" ? result.inboxId : -1));
    await until(() => ids.every((id) => app.store.inbox.get(id)?.outcome === "interrupted"));
  });
});

describe("progress notes", () => {
  it("a long turn sends one 'still working' note naming what runs, edited in place as it moves on", async () => {
    const channel = new RecordingChannel("test", { edit: true });
    harness = await startTestApp({
      extraTools: testTools,
      channel,
      config: { ...withTools, agent: { progressNoticeSecs: 0.2 } },
    });
    const { llm } = harness;
    llm!.script(
      reply.toolCalls([{ name: "slow", arguments: { ms: 600 } }]),
      reply.delay(1_500, reply.text("done at last")),
    );
    await channel.receive("a long job");
    const sent = await channel.waitForSent(2, 10_000);
    expect(sent.map((entry) => entry.message.text)).toEqual(["still working — running slow", "done at last"]);
    expect(channel.edits.map((edit) => edit.message.text)).toContain("still working — waiting for the model");
    expect(channel.edits.every((edit) => edit.messageId === sent[0]!.id)).toBe(true);
  }, 15_000);

  it("a quick turn sends none, and 0 turns them off", async () => {
    harness = await startTestApp({
      extraTools: testTools,
      config: { ...withTools, agent: { progressNoticeSecs: 0.3 } },
    });
    const { llm, channel } = harness;
    llm!.script(reply.text("quick"));
    await channel!.receive("fast one");
    await channel!.waitForSent(1);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(channel!.texts()).toEqual(["quick"]);
    await harness.stop();

    harness = await startTestApp({
      extraTools: testTools,
      config: { ...withTools, agent: { progressNoticeSecs: 0 } },
    });
    harness.llm!.script(
      reply.toolCalls([{ name: "slow", arguments: { ms: 400 } }]),
      reply.text("slow answer"),
    );
    await harness.channel!.receive("slow one");
    await harness.channel!.waitForSent(1);
    expect(harness.channel!.texts()).toEqual(["slow answer"]);
  });
});
