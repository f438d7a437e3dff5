import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import type { ToolCallContext } from "../../src/core/tool-runtime.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

const TOOLS = [
  "cron_add",
  "cron_list",
  "cron_remove",
  "cron_run",
  "cron_runs",
  "cron_update",
  "schedule",
  "message",
  "pushover",
];

describe("scheduling and communication tools", () => {
  let test: TestApp;
  let pushover: PushoverFake;
  let channel: RecordingChannel;
  let calls = 0;

  const context: ToolCallContext = ownerCallContext({
    channel: "test",
    chatId: "chat-1",
    replyToMessageId: "m9",
  });

  async function call(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const text = await test.app.tools.execute(
      { id: `call-${++calls}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
      // Command jobs need shell among the calling turn's tools.
      [...TOOLS, "shell"],
      context,
    );
    return JSON.parse(text) as Record<string, unknown>;
  }

  beforeEach(async () => {
    pushover = await startPushoverFake();
    channel = new RecordingChannel("test");
    test = await startTestApp({
      features: [schedulerFeature],
      channel,
      llm: false,
      config: {
        timezone: "Europe/Berlin",
        notify: { pushover: { token: "app-token", user: "user-key", proxy: pushover.proxyUrl } },
      },
    });
  });
  afterEach(async () => {
    await test.stop();
    await pushover.close();
  });

  it("offers the DESIGN.md parameters to the LLM", () => {
    const specs = Object.fromEntries(
      test.app.tools.specs(TOOLS).map((spec) => [spec.function.name, spec.function.parameters]),
    ) as Record<string, { properties: Record<string, unknown>; required?: string[] }>;
    expect(Object.keys(specs.cron_add!.properties)).toEqual(
      expect.arrayContaining(["expression", "delay", "command", "name", "prompt", "timezone", "deliver"]),
    );
    expect(specs.cron_runs!.required).toEqual(["job_id"]);
    expect(Object.keys(specs.cron_runs!.properties)).toEqual(["job_id", "limit"]);
    expect(Object.keys(specs.cron_update!.properties)).toEqual(
      expect.arrayContaining(["job_id", "expression", "command", "enabled"]),
    );
    expect(Object.keys(specs.message!.properties)).toEqual(["content", "channel", "chat_id", "file"]);
    expect(Object.keys(specs.pushover!.properties)).toEqual(
      expect.arrayContaining(["message", "title", "priority", "sound"]),
    );
    expect((specs.schedule!.properties.action as { enum: string[] }).enum).toEqual([
      "create",
      "add",
      "once",
      "list",
      "get",
      "cancel",
      "remove",
      "pause",
      "resume",
    ]);
    expect(test.app.tools.resolveToolSet("subagent").some((name) => TOOLS.includes(name))).toBe(false);
  });

  it("cron_add returns the job with id and next run, delivering to this chat by default", async () => {
    const job = await call("cron_add", { expression: "0 8 * * *", command: "df -h", name: "disk" });
    expect(job).toMatchObject({
      id: 1,
      name: "disk",
      schedule: "0 8 * * *",
      timezone: "Europe/Berlin",
      kind: "shell",
      command: "df -h",
      status: "active",
      deliver: { channel: "test", chat_id: "chat-1", pushover: false, mode: "always" },
    });
    const next = new Date(String(job.next_run));
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect(next.toLocaleTimeString("en-GB", { timeZone: "Europe/Berlin" })).toBe("08:00:00");

    const agentJob = await call("cron_add", {
      delay: "2h",
      prompt: "Summarize the logs",
      deliver: { channel: "test", chat_id: "ops", pushover: true, mode: "on_error" },
    });
    expect(agentJob).toMatchObject({
      kind: "agent",
      deliver: { chat_id: "ops", pushover: true, mode: "on_error" },
    });
  });

  it("rejects invalid schedules with the reason as a tool error", async () => {
    expect(await call("cron_add", { expression: "0 25 * * *", command: "x" })).toEqual({
      ok: false,
      error: {
        code: "cron.invalid_expression",
        message: expect.stringMatching(/25 is an invalid expression for hour/),
      },
    });
    expect(
      await call("cron_add", { expression: "0 8 * * *", command: "x", timezone: "Moon/Crater" }),
    ).toMatchObject({
      error: { code: "cron.invalid_timezone" },
    });
    expect(await call("cron_remove", { job_id: 99 })).toMatchObject({
      error: { code: "cron.job_not_found" },
    });
  });

  it("cron_list, cron_update, cron_run, cron_runs and cron_remove", async () => {
    await call("cron_add", { expression: "0 8 * * *", message: "good morning" });
    const listed = await call("cron_list", {});
    expect(listed).toMatchObject({ count: 1, jobs: [{ id: 1, next_run: expect.any(String) }] });

    const updated = await call("cron_update", { job_id: 1, expression: "30 9 * * 1-5", enabled: false });
    expect(updated).toMatchObject({
      schedule: "30 9 * * 1-5",
      enabled: false,
      status: "paused",
      next_run: null,
    });
    const resumed = await call("cron_update", { job_id: "1", enabled: true });
    expect(resumed).toMatchObject({ status: "active", next_run: expect.any(String) });

    const ran = await call("cron_run", { job_id: 1 });
    expect(ran).toMatchObject({ job_id: 1, status: "ok", trigger: "manual", output: "good morning" });
    await channel.waitForSent(1);
    expect(channel.texts()).toContain("good morning");

    const runs = await call("cron_runs", { job_id: 1, limit: 5 });
    expect(runs).toMatchObject({ job_id: 1, runs: [{ status: "ok", trigger: "manual" }] });

    expect(await call("cron_remove", { job_id: 1 })).toMatchObject({ removed: { id: 1 } });
    expect(await call("cron_list", {})).toEqual({ count: 0, jobs: [] });
  });

  it("schedule mirrors them: create, once, list, get, pause, resume, cancel", async () => {
    const created = await call("schedule", {
      action: "create",
      expression: "*/5 * * * *",
      command: "uptime",
    });
    const once = await call("schedule", { action: "once", delay: "30m", message: "tea" });
    expect(once).toMatchObject({ kind: "message", schedule: expect.stringMatching(/^once at /) });
    expect(await call("schedule", { action: "once", expression: "* * * * *", message: "x" })).toMatchObject({
      error: { code: "schedule.once_needs_time" },
    });
    expect(await call("schedule", { action: "list" })).toMatchObject({ count: 2 });
    expect(await call("schedule", { action: "get", job_id: created.id })).toMatchObject({
      job: { id: created.id },
      recent_runs: [],
    });
    expect(await call("schedule", { action: "pause", job_id: created.id })).toMatchObject({
      status: "paused",
    });
    expect(await call("schedule", { action: "resume", job_id: created.id })).toMatchObject({
      status: "active",
    });
    expect(await call("schedule", { action: "cancel", job_id: once.id })).toMatchObject({
      removed: { id: once.id },
    });
    expect(await call("schedule", { action: "remove" })).toMatchObject({
      error: { code: "schedule.job_id_required" },
    });
  });

  it("pushover sends through the configured proxy; priority 2 carries retry and expire", async () => {
    const sent = await call("pushover", {
      message: "Backup failed",
      title: "NAS",
      priority: 2,
      retry: 60,
      expire: 600,
      sound: "siren",
    });
    expect(sent).toMatchObject({ ok: true, sent: true });
    expect(pushover.notifications[0]?.fields).toMatchObject({
      message: "Backup failed",
      title: "NAS",
      priority: "2",
      retry: "60",
      expire: "600",
      sound: "siren",
    });
    expect(await call("pushover", { message: "x", priority: 3 })).toMatchObject({
      error: { code: "tool.invalid_arguments" },
    });
  });

  it("message defaults to the current chat and refuses unknown channels", async () => {
    expect(await call("message", { content: "hello here" })).toMatchObject({
      ok: true,
      channel: "test",
      chat_id: "chat-1",
      status: "sent",
    });
    expect(channel.sent.at(-1)).toMatchObject({ target: { channel: "test", chatId: "chat-1" } });
    expect(await call("message", { content: "x", channel: "discord", chat_id: "1" })).toMatchObject({
      error: { code: "message.unknown_channel" },
    });
    expect(await call("message", { content: "x", chat_id: "stranger" })).toMatchObject({
      error: { code: "message.chat_not_allowed" },
    });
  });
});

describe("pushover tool without configuration", () => {
  it("fails with a clear error naming the keys to set", async () => {
    const test = await startTestApp({ features: [schedulerFeature], llm: false });
    try {
      const text = await test.app.tools.execute(
        { id: "1", type: "function", function: { name: "pushover", arguments: '{"message":"hi"}' } },
        ["pushover"],
        ownerCallContext({ channel: "test", chatId: "c" }),
      );
      expect(JSON.parse(text)).toMatchObject({
        ok: false,
        error: { code: "pushover.not_configured", message: expect.stringMatching(/PUSHOVER_TOKEN/) },
      });
    } finally {
      await test.stop();
    }
  });
});
