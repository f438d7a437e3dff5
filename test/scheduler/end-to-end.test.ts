import { mkdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { TelegramChannel } from "../../channels/telegram.js";
import { accessFeature } from "../../src/app/access-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { Authority } from "../../src/security/authority.js";
import { channelDeps } from "../channels/helpers.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

const USER = { id: 777, first_name: "Alice", username: "alice" };
const DM = { id: 777, type: "private" as const };

/** A 6-field cron expression for the UTC second `secondsAhead` from now (it fires once during a test). */
function expressionSecondsAhead(secondsAhead: number): string {
  const at = new Date(Date.now() + secondsAhead * 1000);
  return `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
}

describe("scheduler end to end (Telegram fake, OpenAI fake, Pushover fake)", () => {
  let telegram: FakeTelegram;
  let pushover: PushoverFake;
  let test: TestApp | undefined;

  async function start(
    config: Record<string, unknown> = {},
    extraChannel?: RecordingChannel,
    allowAll = false,
  ) {
    telegram = await new FakeTelegram().start();
    pushover = await startPushoverFake();
    const adapter = new TelegramChannel(
      channelDeps({ telegram: { token: telegram.validToken, apiRoot: telegram.apiRoot, pacing: false } }),
    );
    test = await startTestApp({
      // The real access control (Alice, 777, is on the allowlist; the ops group is configured), unless the
      // test talks through the in-memory channel, which only the harness's allow-all access admits.
      features: allowAll ? [schedulerFeature] : [accessFeature, schedulerFeature],
      channel: extraChannel ?? null,
      adapters: [adapter],
      config: {
        channels: { telegram: { allowFrom: ["777"], groups: ["-1001"], requireMention: false } },
        notify: { pushover: { token: "app-token", user: "user-key", proxy: pushover.proxyUrl } },
        ...config,
      },
    });
    return test;
  }

  afterEach(async () => {
    await test?.stop();
    test = undefined;
    await telegram?.close();
    await pushover?.close();
  });

  it("a user asks for a report, the LLM calls cron_add, the job fires and the report reaches the chat and the phone", async () => {
    const { llm } = await start();
    const expression = expressionSecondsAhead(3);
    llm!.script(
      reply.toolCalls([
        {
          name: "cron_add",
          arguments: {
            expression,
            prompt: "Report the disk usage.",
            name: "disk report",
            deliver: { pushover: true },
          },
        },
      ]),
      reply.text("Done — I'll send the disk report every day at this time."),
      reply.text("Disk report: / is 42% full.", (body) => {
        // The scheduled turn runs in a session of its own: the prompt is the user message, not the chat's.
        const users = body.messages.filter((message) => message.role === "user");
        expect(users.map((message) => message.content)).toEqual(["Report the disk usage."]);
      }),
    );
    telegram.pushMessage({ chat: DM, from: USER, text: "Send me a disk report every day" });

    await waitFor(() => telegram.sentTexts().some((text) => text.includes("every day")), "the confirmation");
    const added = JSON.parse(
      String(llm!.requests[1]?.messages.find((message) => message.role === "tool")?.content),
    ) as { id: number; next_run: string; deliver: { channel: string; chat_id: string } };
    expect(added.deliver).toMatchObject({ channel: "telegram", chat_id: "777", pushover: true });
    expect(Date.parse(added.next_run)).toBeGreaterThan(Date.now() - 1000);

    await waitFor(
      () => telegram.sentTexts().find((text) => text.includes("42% full")),
      "the report in Telegram",
      8000,
    );
    const reportCall = telegram
      .callsOf("sendMessage")
      .find((call) => String(call.body.text).includes("42% full"));
    expect(String(reportCall?.body.chat_id)).toBe("777");
    expect(String(reportCall?.body.text)).toMatch(/disk report/);
    const [notification] = await pushover.waitFor(1);
    expect(notification).toMatchObject({ host: "api.pushover.net", path: "/1/messages.json" });
    expect(notification?.fields.message).toContain("42% full");
    expect(notification?.fields.title).toContain("disk report");

    const runs = test!.app.store.db
      .prepare("SELECT status, scheduled_at, started_at FROM cron_runs")
      .all() as Array<{
      status: string;
      scheduled_at: number;
      started_at: number;
    }>;
    expect(runs).toHaveLength(1);
    expect(runs[0]?.status).toBe("ok");
    expect(runs[0]!.started_at - runs[0]!.scheduled_at).toBeLessThan(1000);
    // The report went out as a report: it is not part of the chat's conversation history.
    const history = test!.app.store.db
      .prepare("SELECT content FROM messages WHERE session_key = 'telegram:777'")
      .all() as Array<{ content: string | null }>;
    expect(history.length).toBeGreaterThan(0);
    expect(history.some((row) => row.content?.includes("42% full"))).toBe(false);
    await waitFor(
      () =>
        (
          test!.app.store.db.prepare("SELECT delivery_state FROM cron_runs").get() as {
            delivery_state: string;
          }
        ).delivery_state === "delivered",
      "the run's delivery to be recorded",
    );
    llm!.assertDone();
  });

  it("the message tool posts to another channel's allowed chat and refuses others", async () => {
    const console = new RecordingChannel("test");
    const { llm, app, config } = await start({}, console, true);
    // The one delivery rule (what the access feature registers), without its access control for "test".
    app.context.services.authority = new Authority(config, null);
    llm!.script(
      reply.toolCalls([
        {
          name: "message",
          arguments: { content: "Deploy finished ✅", channel: "telegram", chat_id: "-1001" },
        },
      ]),
      reply.toolCalls([
        { name: "message", arguments: { content: "sneaky", channel: "telegram", chat_id: "-999" } },
      ]),
      reply.text("Posted."),
    );
    await test!.app.router.message({
      channel: "test",
      chatId: "ops",
      messageId: "1",
      userId: "u1",
      userName: "Owner",
      text: "tell the ops group the deploy finished",
      isDirect: true,
      mentionsBot: true,
      attachments: [],
      receivedAt: Date.now(),
    });
    await waitFor(() => console.texts().includes("Posted."), "the final answer");
    expect(
      telegram.callsOf("sendMessage").map((call) => [String(call.body.chat_id), call.body.text]),
    ).toEqual([["-1001", "Deploy finished ✅"]]);
    const refusal = llm!.requests[2]?.messages.filter((message) => message.role === "tool").at(-1)?.content;
    expect(refusal).toMatch(/message\.chat_not_allowed/);
    llm!.assertDone();
  });

  it("a report whose delivery finally fails raises a Pushover alert", async () => {
    await start();
    const scheduler = test!.app.context.services.scheduler as Scheduler;
    telegram.failNext("sendMessage", 403, "Forbidden: bot was blocked by the user");
    const job = scheduler.add(
      { expression: expressionSecondsAhead(1), message: "standup in 5 minutes" },
      {
        createdFrom: { channel: "telegram", chatId: "777" },
      },
    );
    const [alert] = await pushover.waitFor(1, 8000);
    expect(alert?.fields.title).toMatch(/not delivered/);
    expect(alert?.fields.message).toMatch(/bot was blocked/);
    const run = await waitFor(
      () => scheduler.runs(job.id, 1).find((candidate) => candidate.deliveryState !== "pending"),
      "the failed delivery to be recorded",
    );
    expect(run).toMatchObject({ status: "ok", deliveryState: "failed" });
    expect(run.delivery?.chat).toMatchObject({ status: "failed", error: expect.stringMatching(/blocked/) });
    expect(run?.delivery?.alert).toEqual({ status: "sent" });
  });

  it("/cron works in chat without an LLM", async () => {
    await start({ llm: { baseUrl: undefined } });
    telegram.pushMessage({ chat: DM, from: USER, text: "/cron add 0 8 * * * df -h" });
    await waitFor(
      () => telegram.sentTexts().find((text) => text.includes("Added job #1")),
      "the /cron add answer",
    );
    telegram.pushMessage({ chat: DM, from: USER, text: "/cron list" });
    await waitFor(
      () => telegram.sentTexts().find((text) => text.includes("#1 df -h")),
      "the /cron list answer",
    );
    expect(telegram.sentTexts().join("\n")).toMatch(/next 20\d\d-\d\d-\d\dT08:00:00\.000Z → telegram:777/);
  });
});

describe("shell jobs through the shell tool", () => {
  let test: TestApp | undefined;
  afterEach(async () => {
    await test?.stop();
  });

  it("runs the command with the shell tool's guards and audit, and reports stdout and exit code", async () => {
    const channel = new RecordingChannel("test");
    test = await startTestApp({ features: [schedulerFeature], channel, llm: false });
    const scheduler = test.app.context.services.scheduler as Scheduler;
    mkdirSync(test.config.workspace, { recursive: true });
    const ok = scheduler.add(
      { delay: "1s", command: "echo hello-from-cron" },
      { createdFrom: { channel: "test", chatId: "c1" } },
    );
    const failing = scheduler.add(
      { delay: "1s", command: "echo oops >&2; exit 3" },
      { createdFrom: { channel: "test", chatId: "c1" } },
    );
    await waitFor(() => channel.texts().length >= 2 && channel.texts(), "both reports", 8000);
    const reports = channel.texts().join("\n---\n");
    expect(reports).toMatch(/ok[\s\S]*hello-from-cron/);
    expect(reports).toMatch(/failed[\s\S]*oops[\s\S]*\[exit code 3\]/);
    expect(scheduler.runs(ok.id, 1)[0]?.status).toBe("ok");
    expect(scheduler.runs(failing.id, 1)[0]?.status).toBe("error");
    const audited = test.app.store.db
      .prepare("SELECT session_key, tool FROM audit WHERE tool = 'shell' ORDER BY id")
      .all() as Array<{ session_key: string; tool: string }>;
    // Both jobs run at once; the audit order is whichever finished first.
    expect(audited.map((row) => row.session_key).sort()).toEqual(
      [`cron:${ok.id}`, `cron:${failing.id}`].sort(),
    );
  });
});
