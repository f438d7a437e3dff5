import { afterEach, describe, expect, it } from "vitest";
import { deliveryFailoverFeature } from "../../src/app/delivery-failover-feature.js";
import type { MagpieFeature } from "../../src/app/feature.js";
import { metricsFeature } from "../../src/app/metrics-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import { undeliveredItems } from "../../src/dashboard/pages/home-data.js";
import { ChannelSendError } from "../../src/lib/errors.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { TraceRepository, traceOf } from "../../src/store/trace.js";
import { deliveryLines, timeFormat, traceText } from "../../src/store/trace-text.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp, testConfig } from "../helpers/harness.js";

let harness: TestApp | undefined;
let ntfy: NtfyFake | undefined;
afterEach(async () => {
  await harness?.stop();
  await ntfy?.close();
  harness = undefined;
  ntfy = undefined;
});

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const blocked = () =>
  new ChannelSendError("Forbidden: bot was blocked by the user", { permanent: true, code: "channel.403" });

/** user-1 is the owner; guest-1 is a guest. */
const roles: MagpieFeature = {
  name: "roles",
  provides: ["authority"],
  setup: () => ({
    authority: {
      roleOf: (_channel: string, userId: string) => (userId === "guest-1" ? "guest" : "owner"),
      mayDeliver: () => true,
    },
  }),
};

async function start(
  delivery: Record<string, unknown>,
  extra: MagpieFeature[] = [],
  config: Record<string, unknown> = {},
): Promise<TestApp> {
  ntfy = await startNtfyFake();
  harness = await startTestApp({
    features: [roles, deliveryFailoverFeature, metricsFeature, ...extra],
    config: {
      ...config,
      notify: { ntfy: { url: ntfy.url, topic: "owner" } },
      delivery,
      http: { metrics: { enabled: true } },
    },
  });
  return harness;
}

const failoverRows = (app: TestApp["app"]) =>
  app.store.db.prepare("SELECT outbox_id, data FROM trace_events WHERE kind = 'failover'").all() as Array<{
    outbox_id: number;
    data: string;
  }>;

describe("delivery failover", () => {
  it("a cron report to a chat that blocked the bot goes out through the fallback list in order (real ntfy HTTP) and is traced", async () => {
    const { app, channel } = await start({ fallback: ["pushover", "ntfy", "test:chat-9"] });
    channel!.failNext(blocked());
    const outboxId = app.store.outbox.enqueue(
      { channel: "test", chatId: "chat-blocked" },
      { text: "Nightly backup: 3 files, 12 MB", format: "plain" },
      { origin: "cron" },
    );
    app.outbox.wake();
    const [message] = await ntfy!.waitFor(1);
    expect(message!.message).toContain("Nightly backup: 3 files, 12 MB");
    expect(message!.message).toContain(`Trace: outbox ${outboxId}`);
    expect(message!.topic).toBe("owner");
    await until(() => failoverRows(app).length === 1);
    const data = JSON.parse(failoverRows(app)[0]!.data) as { path: string; tried: string[] };
    // pushover is not configured: tried first, failed; ntfy delivered; the chat path was never needed.
    expect(data).toMatchObject({ path: "ntfy", tried: ["pushover", "ntfy"] });
    expect(channel!.sent.filter((entry) => entry.target.chatId === "chat-9")).toHaveLength(0);
    expect(app.store.outbox.get(outboxId)!.status).toBe("failed");
    const metrics = await (await fetch(`${harness!.url}/metrics`)).text();
    expect(metrics).toContain('magpie_delivery_failovers_total{path="ntfy"} 1');
  });

  it("an owner's DM reply that is refused goes to another chat when that is the first path; trace names the path", async () => {
    const { app, channel, llm } = await start({ fallback: ["test:chat-9"] });
    llm!.script(reply.text("the disk is 93% full"));
    channel!.failNext(blocked());
    const result = await channel!.receive("how full is the disk?");
    const inboxId = result.status === "accepted" ? result.inboxId : -1;
    await until(() => channel!.sent.some((entry) => entry.target.chatId === "chat-9"));
    const redirected = channel!.sent.find((entry) => entry.target.chatId === "chat-9")!;
    expect(redirected.message.text).toContain("the disk is 93% full");
    expect(redirected.message.text).toContain(`Trace: magpie trace ${inboxId}`);
    await until(() => failoverRows(app).length === 1);
    const text = traceText(
      traceOf(new TraceRepository(app.store.db), app.store.inbox.get(inboxId)!),
      timeFormat("UTC"),
    );
    expect(text).toContain("delivered via test:chat-9 (failover)");
    expect(app.store.inbox.get(inboxId)!.outcome).toBe("undeliverable");
  });

  it("ATTACK: a guest's undeliverable reply is never redirected — not to ntfy, e-mail or another chat", async () => {
    // Every kind of path is listed; no failover claim or trace row for the guest's item means none was tried.
    const { app, channel, llm } = await start({
      fallback: ["ntfy", "email:owner@example.org", "test:chat-9"],
    });
    llm!.script(reply.text("guest secret answer"), reply.text("owner answer"));
    channel!.failNext(blocked());
    const result = await channel!.receive("hello", {
      userId: "guest-1",
      chatId: "guest-dm",
      userName: "Guest",
    });
    const inboxId = result.status === "accepted" ? result.inboxId : -1;
    await until(() => app.store.inbox.get(inboxId)?.outcome === "undeliverable");
    // A refused owner DM after it: failover handles items in order, so once the owner's arrives the guest's
    // would have been sent (or at least claimed — the claim is written before anything is sent).
    channel!.failNext(blocked());
    await channel!.receive("and me?");
    await ntfy!.waitFor(1);
    await until(() => failoverRows(app).length === 1);
    expect(ntfy!.messages.map((message) => message.message).join("\n")).not.toContain("guest secret answer");
    expect(ntfy!.messages[0]!.message).toContain("owner answer");
    expect(channel!.sent.map((entry) => entry.target.chatId)).not.toContain("chat-9");
    const guestOutbox = app.store.db.prepare("SELECT id FROM outbox WHERE inbox_id = ?").pluck().get(inboxId);
    expect(app.store.kv.has(`failover:${guestOutbox}`)).toBe(false);
    expect(failoverRows(app).map((row) => row.outbox_id)).not.toContain(guestOutbox);
  });

  it("a guest's reply in a group, even from an owner's group chat, is not redirected; an owner's DM is", async () => {
    const { app, channel, llm } = await start({ fallback: ["ntfy"] });
    llm!.script(reply.text("group answer"), reply.text("dm answer"));
    channel!.failNext(blocked());
    const group = await channel!.receive("hi all", { chatId: "group-1", isDirect: false });
    const groupId = group.status === "accepted" ? group.inboxId : -1;
    await until(() => app.store.inbox.get(groupId)?.outcome === "undeliverable");
    channel!.failNext(blocked());
    await channel!.receive("hi me");
    const [message] = await ntfy!.waitFor(1);
    expect(message!.message).toContain("dm answer");
    expect(ntfy!.messages).toHaveLength(1);
  });

  it("a reply still failing after delivery.failoverAfterSecs becomes undeliverable and fails over once", async () => {
    const { app, channel, llm } = await start({ fallback: ["ntfy"], failoverAfterSecs: 1 });
    llm!.script(reply.text("late answer"));
    channel!.failNext(new ChannelSendError("Bad Gateway", { code: "channel.502" }), 20);
    const result = await channel!.receive("question");
    const inboxId = result.status === "accepted" ? result.inboxId : -1;
    const [message] = await ntfy!.waitFor(1, 8_000);
    expect(message!.message).toContain("late answer");
    expect(message!.message).toContain("still failing after 1 s");
    expect(app.store.inbox.get(inboxId)!.outcome).toBe("undeliverable");
    await app.outbox.flush(1_000);
    expect(ntfy!.messages).toHaveLength(1);
    expect(channel!.sent.filter((entry) => entry.message.text === "late answer")).toHaveLength(0);
  });

  it("ATTACK: a job delivering to a chat and to ntfy whose chat copy is refused reaches ntfy once, not again as its failover", async () => {
    const { app, channel } = await start({ fallback: ["ntfy", "test:chat-9"] }, [schedulerFeature]);
    const scheduler = app.context.services.scheduler as Scheduler;
    const job = scheduler.add({
      name: "nightly",
      expression: "0 3 * * *",
      message: "Nightly backup: 4 files",
      deliver: { channel: "test", chatId: "chat-blocked", ntfy: true },
    });
    channel!.failNext(blocked());
    scheduler.start();
    const run = await scheduler.runNow(job.id);
    const settled = await until(() => scheduler.runs(job.id, 1)[0]?.deliveryState === "failed").then(
      () => scheduler.runs(job.id, 1)[0]!,
    );
    expect(settled.id).toBe(run.id);
    expect(settled.delivery).toMatchObject({ ntfy: { status: "sent" }, chat: { status: "failed" } });
    // The owner has the report on ntfy: the failover counts that path as delivered and sends nothing more.
    expect(settled.delivery).toMatchObject({ failedOver: "ntfy" });
    await until(() => failoverRows(app).length === 1);
    expect(
      ntfy!.messages.filter((message) => message.message.includes("Nightly backup: 4 files")),
    ).toHaveLength(1);
    expect(JSON.parse(failoverRows(app)[0]!.data)).toMatchObject({
      path: "ntfy",
      tried: [],
      already: "ntfy",
    });
    expect(ntfy!.messages).toHaveLength(1);
    expect(channel!.sent.filter((entry) => entry.target.chatId === "chat-9")).toHaveLength(0);
    // The trace says what happened — the report had reached ntfy by its own delivery — not a failover to it, and
    // /metrics counts no failover: nothing was sent as one.
    const outboxId = failoverRows(app)[0]!.outbox_id;
    const line = deliveryLines(
      new TraceRepository(app.store.db).outboxItem(outboxId)!,
      timeFormat("UTC"),
    )[0]!;
    expect(line).toContain("already delivered via ntfy by its own delivery (failover sent nothing)");
    expect(line).not.toContain("delivered via ntfy (failover)");
    // The dashboard's home card reads the same row.
    expect(undeliveredItems(app.store.db)[0]).toMatchObject({
      outboxId,
      failover: "ntfy",
      failoverAlready: true,
    });
    const metrics = await (await fetch(`${harness!.url}/metrics`)).text();
    expect(metrics).not.toMatch(/^magpie_delivery_failovers_total\{/m);
  });

  it("ATTACK: the same for a trigger delivering to a chat and to ntfy: ntfy gets its message once", async () => {
    const secret = "s".repeat(32);
    const { app, channel } = await start({ fallback: ["ntfy"] }, [triggersFeature], {
      triggers: {
        door: {
          on: { webhook: { secret } },
          do: { message: "The shed door opened" },
          deliver: { channel: "test", chat_id: "chat-blocked", ntfy: true },
        },
      },
    });
    channel!.failNext(blocked());
    const body = "{}";
    const timestamp = Math.floor(Date.now() / 1000);
    const response = await fetch(`${harness!.url}/hooks/door`, {
      method: "POST",
      headers: {
        "x-magpie-timestamp": String(timestamp),
        "x-magpie-signature": signWebhook(secret, timestamp, body),
      },
      body,
    });
    expect(response.status).toBe(202);
    // The trigger's own ntfy copy; the failover row is written after any send the failover made.
    await ntfy!.waitFor(1);
    await until(() => failoverRows(app).length === 1);
    expect(ntfy!.messages.filter((message) => message.message.includes("The shed door opened"))).toHaveLength(
      1,
    );
    expect(JSON.parse(failoverRows(app)[0]!.data)).toMatchObject({ path: "ntfy", already: "ntfy" });
    const metrics = await (await fetch(`${harness!.url}/metrics`)).text();
    expect(metrics).not.toMatch(/^magpie_delivery_failovers_total\{/m);
  });

  it("a bad fallback entry is a config error naming the key path and the fix", () => {
    expect(() => testConfig({ delivery: { fallback: ["ntfy", "smoke-signal"] } })).toThrow(
      /delivery\.fallback\[1\][^\n]*ntfy, pushover, "email:<address>"/,
    );
    expect(() => testConfig({ delivery: { fallback: ["email:not-an-address"] } })).toThrow(
      /delivery\.fallback\[0\][^\n]*email:me@example.org/,
    );
    expect(testConfig({ delivery: { fallback: ["matrix:!room:server"] } }).delivery).toEqual({
      fallback: ["matrix:!room:server"],
      failoverAfterSecs: 600,
    });
  });
});
