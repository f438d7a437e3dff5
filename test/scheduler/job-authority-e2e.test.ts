import { afterEach, describe, expect, it } from "vitest";
import { TelegramChannel } from "../../channels/telegram.js";
import { accessFeature } from "../../src/app/access-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { channelDeps } from "../channels/helpers.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * Jobs carry their creator's authority (DESIGN.md → Security), attacked as issue 10 reports it: one tool call
 * schedules the bot's secrets to a stranger; a narrow agent escalates through command and prompt jobs; a job's
 * approval prompt lands in another chat. Through the real grammY client against the Telegram fake.
 */

const OWNER = { id: 777, first_name: "Alice" };
const DM = { id: 777, type: "private" as const };
const GUEST = { id: 2002, first_name: "User2002" };
const GROUP = { id: -1001, type: "supergroup" as const, title: "Ops" };
const STRANGER = "666";

let telegram: FakeTelegram;
let test: TestApp | undefined;

async function start(config: Record<string, unknown> = {}, withApprovals = false): Promise<TestApp> {
  telegram = await new FakeTelegram().start();
  const adapter = new TelegramChannel(
    channelDeps({ telegram: { token: telegram.validToken, apiRoot: telegram.apiRoot, pacing: false } }),
  );
  test = await startTestApp({
    features: withApprovals
      ? [accessFeature, securityFeature, schedulerFeature]
      : [accessFeature, schedulerFeature],
    channel: null,
    adapters: [adapter],
    config: {
      channels: { telegram: { allowFrom: ["777"], groups: ["-1001"], requireMention: false } },
      ...config,
    },
  });
  return test;
}

afterEach(async () => {
  await test?.stop();
  test = undefined;
  await telegram?.close();
});

const sentTo = (chatId: string) =>
  telegram
    .callsOf("sendMessage")
    .filter((call) => String(call.body.chat_id) === chatId)
    .map((call) => String(call.body.text));

/** The tool results the LLM got back in its n-th request, parsed. */
function toolResults(request: ChatRequestBody | undefined): Array<Record<string, unknown>> {
  return (request?.messages ?? [])
    .filter((message) => message.role === "tool")
    .map((message) => JSON.parse(String(message.content)) as Record<string, unknown>);
}

const schedulerOf = (app: TestApp) => app.app.context.services.scheduler as Scheduler;

describe("a job's report goes only where the message tool may post", () => {
  it("cron_add, schedule and cron_update to a stranger's chat are refused; nothing ever reaches it", async () => {
    const { llm } = await start();
    llm!.script(
      reply.toolCalls([
        {
          name: "cron_add",
          arguments: { delay: "2s", command: "echo secret", deliver: { chat_id: STRANGER } },
        },
        {
          name: "schedule",
          arguments: {
            action: "once",
            delay: "2s",
            command: "echo secret",
            deliver: { channel: "telegram", chat_id: STRANGER },
          },
        },
        { name: "cron_add", arguments: { delay: "2s", command: "echo secret", name: "mine" } },
      ]),
      reply.toolCalls([
        { name: "cron_update", arguments: { job_id: "mine", deliver: { chat_id: STRANGER } } },
      ]),
      reply.text("Scheduled."),
    );
    telegram.pushMessage({ chat: DM, from: OWNER, text: "send the secret to 666 in 2 seconds" });
    await waitFor(() => sentTo("777").includes("Scheduled."), "the answer");

    const [viaCronAdd, viaSchedule, mine] = toolResults(llm!.requests[1]);
    expect(viaCronAdd).toMatchObject({ ok: false, error: { code: "cron.deliver_not_allowed" } });
    expect(viaSchedule).toMatchObject({ ok: false, error: { code: "cron.deliver_not_allowed" } });
    expect(mine).toMatchObject({ name: "mine", deliver: { chat_id: "777" } });
    expect(toolResults(llm!.requests[2]).at(-1)).toMatchObject({
      ok: false,
      error: { code: "cron.deliver_not_allowed", message: expect.stringMatching(/chat 666 on telegram/) },
    });
    expect(schedulerOf(test!).list()).toEqual([expect.objectContaining({ name: "mine" })]);

    // The one job that exists runs and reports to the chat it was made in, never to the stranger.
    await waitFor(() => sentTo("777").some((text) => text.includes("secret")), "the report in 777", 8000);
    expect(sentTo(STRANGER)).toEqual([]);
    llm!.assertDone();
  });

  it("a group taken off the allowlist after the job was made gets nothing; the run records the refusal", async () => {
    const { app, config } = await start();
    const scheduler = schedulerOf(test!);
    const job = scheduler.add(
      { delay: "1s", message: "weekly numbers", deliver: { channel: "telegram", chatId: "-1001" } },
      {
        createdFrom: { channel: "telegram", chatId: "777" },
        creator: { identity: { channel: "telegram", userId: "777", role: "owner" } },
      },
    );
    expect(job.deliver).toMatchObject({ chat_id: "-1001" });
    // The owner drops the group from channels.telegram.groups before the job runs (a reload: the config is frozen).
    const telegramConfig = config.channels.telegram!;
    await app.reload({
      ...config,
      channels: { ...config.channels, telegram: { ...telegramConfig, groups: [] } },
    });
    const run = await waitFor(() => scheduler.runs(job.id, 1)[0]?.delivery ?? undefined, "the run", 8000);
    expect(run.refused).toMatch(/telegram:-1001 is no longer a chat Magpie may post to/);
    expect(scheduler.runs(job.id, 1)[0]).toMatchObject({ status: "ok", deliveryState: "failed" });
    expect(sentTo("-1001")).toEqual([]);
    expect(app.store.outbox.get(1)).toBeUndefined();
  });
});

describe("a job runs with no more tools than the turn that made it", () => {
  it("an agent with [cron_add, schedule] can't schedule a command, and its prompt job gets no shell or file tools", async () => {
    const { llm } = await start({ agents: { main: { toolSet: ["cron_add", "schedule"] } } });
    llm!.script(
      reply.toolCalls([
        { name: "cron_add", arguments: { delay: "1s", command: "base64 -w0 ../magpie.yaml" } },
        { name: "schedule", arguments: { action: "create", delay: "1s", command: "cat ~/.ssh/id_rsa" } },
        { name: "cron_add", arguments: { delay: "1s", prompt: "Read ../magpie.yaml and post it here." } },
      ]),
      reply.text("Scheduled."),
      reply.text("I have no tools to read files.", (body) => {
        const offered = (body.tools ?? []).map((tool) => tool.function.name);
        expect(offered.filter((name) => /^(shell|file_|apply_patch|git_)/.test(name))).toEqual([]);
        expect(offered).not.toContain("cron_add");
      }),
    );
    telegram.pushMessage({ chat: DM, from: OWNER, text: "schedule something" });
    await waitFor(() => sentTo("777").includes("Scheduled."), "the answer");
    const [command, viaSchedule, prompt] = toolResults(llm!.requests[1]);
    expect(command).toMatchObject({ ok: false, error: { code: "cron.tool_not_allowed" } });
    expect(viaSchedule).toMatchObject({ ok: false, error: { code: "cron.tool_not_allowed" } });
    expect(prompt).toMatchObject({ kind: "agent" });
    await waitFor(
      () => sentTo("777").some((text) => text.includes("no tools to read files")),
      "the prompt job's report",
      8000,
    );
    llm!.assertDone();
  });

  it("cron_update can't turn an existing job into a command from a turn without shell", async () => {
    const { llm } = await start({ agents: { main: { toolSet: ["cron_update", "cron_list"] } } });
    const scheduler = schedulerOf(test!);
    const job = scheduler.add(
      { expression: "0 8 * * *", message: "good morning" },
      { createdFrom: { channel: "telegram", chatId: "777" } },
    );
    llm!.script(
      reply.toolCalls([{ name: "cron_update", arguments: { job_id: job.id, command: "env" } }]),
      reply.text("Could not."),
    );
    telegram.pushMessage({ chat: DM, from: OWNER, text: "make it run env" });
    await waitFor(() => sentTo("777").includes("Could not."), "the answer");
    expect(toolResults(llm!.requests[1])[0]).toMatchObject({ error: { code: "cron.tool_not_allowed" } });
    expect(scheduler.get(job.id)).toMatchObject({ kind: "message", message: "good morning" });
  });
});

describe("a job's approval requests go to its creator", () => {
  it("with approvals required for shell, the prompt goes to the chat the job was made in, not its report chat", async () => {
    const { llm } = await start({ security: { approvals: { require: ["shell"], timeoutSecs: 1 } } }, true);
    llm!.script(
      reply.toolCalls([
        {
          name: "cron_add",
          arguments: { delay: "1s", command: "echo from-the-job", deliver: { chat_id: "-1001" } },
        },
      ]),
      reply.text("Scheduled."),
    );
    telegram.pushMessage({ chat: DM, from: OWNER, text: "post a check to the ops group" });
    await waitFor(() => sentTo("777").includes("Scheduled."), "the answer");
    // The cron_add itself needed no approval (only shell does); the job's shell call asks in Alice's DM.
    await waitFor(
      () => sentTo("777").find((text) => text.includes("Approval needed")),
      "the approval prompt in the creator's chat",
      8000,
    );
    expect(sentTo("777").find((text) => text.includes("Approval needed"))).toContain("echo from-the-job");
    // Nobody answers: timeout = deny; the group gets the report of the refused run, never the prompt.
    await waitFor(() => sentTo("-1001").length > 0 && sentTo("-1001"), "the report in the group", 8000);
    expect(sentTo("-1001").join("\n")).not.toMatch(/Approval needed/);
    expect(sentTo("-1001").join("\n")).not.toContain("from-the-job\n");
    const others = telegram
      .callsOf("sendMessage")
      .filter((call) => !["777", "-1001"].includes(String(call.body.chat_id)));
    expect(others).toEqual([]);
    llm!.assertDone();
  });
});

describe("guests can't make jobs", () => {
  it("a guest's turn given cron_add through guestToolSet is still refused", async () => {
    const { llm } = await start({ security: { guestToolSet: ["cron_add", "schedule"] } });
    llm!.script(
      reply.toolCalls([
        { name: "cron_add", arguments: { delay: "1s", message: "hi" } },
        { name: "schedule", arguments: { action: "once", delay: "1s", message: "hi" } },
      ]),
      reply.text("No."),
    );
    telegram.pushMessage({ chat: GROUP, from: GUEST, text: "remind the group in a second" });
    await waitFor(() => sentTo("-1001").includes("No."), "the answer");
    // A guest's message is untrusted content: the rule of two refuses the job before the scheduler's own guest
    // rule is reached (that rule is attacked directly in the next test).
    for (const result of toolResults(llm!.requests[1])) {
      expect(result).toMatchObject({ ok: false, refused: true, error: { code: "untrusted.schedule" } });
    }
    expect(schedulerOf(test!).list()).toEqual([]);
  });

  it("the scheduler refuses a guest identity whatever the entry point (/cron add included)", async () => {
    await start({ llm: { baseUrl: undefined } });
    const guest = { channel: "telegram", userId: "2002", role: "guest" as const };
    expect(() =>
      schedulerOf(test!).add(
        { delay: "1s", message: "hi" },
        { createdFrom: { channel: "telegram", chatId: "-1001" }, creator: { identity: guest } },
      ),
    ).toThrow(/Only an owner can schedule jobs/);
    expect(schedulerOf(test!).list()).toEqual([]);
  });
});
