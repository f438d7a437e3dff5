import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { features } from "../../src/app/features.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { FakeSlack, SLACK_BOT_USER, SLACK_TEAM } from "../fakes/slack.js";
import { type FakeTelegram, TELEGRAM_BOT } from "../fakes/telegram.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { startTelegramApp } from "../helpers/telegram-app.js";

/**
 * Authority follows the sender (DESIGN.md → Security → Identities and authority), attacked as a hostile member
 * of an allowlisted group would, through the real grammY client against the Telegram fake.
 */

const OWNER = { id: 777, first_name: "Alice" };
const GUEST = { id: 2002, first_name: "User2002" };
const GROUP = { id: -1001, type: "supergroup" as const, title: "Ops" };
const MENTION = `@${TELEGRAM_BOT.username}`;

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

async function groupApp(): Promise<{ telegram: FakeTelegram; testApp: TestApp }> {
  const app = await startTelegramApp({
    access: { allowFrom: [OWNER.id], groups: [GROUP.id] },
    config: { security: { approvals: { require: ["shell"], timeoutSecs: 30 } } },
  });
  cleanup.push(() => app.stop());
  return app;
}

/** A mention (or a command addressed to the bot, as Telegram groups need) from `from` in the group. */
function say(telegram: FakeTelegram, from: { id: number; first_name: string }, text: string): void {
  const [command, ...rest] = text.split(" ");
  const addressed = text.startsWith("/")
    ? [`${command}@${TELEGRAM_BOT.username}`, ...rest].join(" ")
    : `${MENTION} ${text}`;
  const length = text.startsWith("/") ? addressed.split(" ")[0]!.length : MENTION.length;
  telegram.pushMessage({
    chat: GROUP,
    from,
    text: addressed,
    entities: [{ type: text.startsWith("/") ? "bot_command" : "mention", offset: 0, length }],
  });
}

function press(telegram: FakeTelegram, from: { id: number; first_name: string }, data: string): number {
  return telegram.pushUpdate({
    callback_query: {
      id: `cb-${from.id}-${data}`,
      from: { ...from, is_bot: false },
      chat_instance: "ci",
      data,
      message: { message_id: 5, date: 0, chat: GROUP, text: "Approval needed" },
    },
  });
}

const groupTexts = (telegram: FakeTelegram) =>
  telegram
    .callsOf("sendMessage")
    .filter((call) => !call.failed && String(call.body.chat_id) === String(GROUP.id))
    .map((call) => String(call.body.text));

describe("authority follows the sender (Telegram group)", () => {
  it("a guest's Approve press and /approve on the owner's pending shell call are refused; nothing runs", async () => {
    const { telegram, testApp } = await groupApp();
    const marker = path.join(testApp.config.workspace, "pwned");
    testApp.llm!.script(
      reply.toolCalls([{ name: "shell", arguments: { command: `touch ${marker}` } }]),
      reply.text("not run, as you wish"),
    );
    say(telegram, OWNER, "clean up please");
    const prompt = await waitFor(
      () => groupTexts(telegram).find((text) => text.includes("Approval needed")),
      "the approval prompt",
    );
    const id = /request ([0-9a-f]+)/.exec(prompt)![1]!;

    const pressed = press(telegram, GUEST, `approve:${id}`);
    await waitFor(() => telegram.acknowledgedOffset > pressed, "the guest's press handled");
    say(telegram, GUEST, `/approve ${id}`);
    await waitFor(
      () => groupTexts(telegram).filter((text) => /Only an owner/.test(text)).length >= 2,
      "two refusals",
    );
    expect(existsSync(marker)).toBe(false);
    expect(groupTexts(telegram).join("\n")).not.toMatch(/Approved: shell/);

    press(telegram, OWNER, `deny:${id}`);
    await waitFor(() => groupTexts(telegram).includes("not run, as you wish"), "the turn's end");
    expect(existsSync(marker)).toBe(false);
    // The press reaches the gate and is refused there; /approve is refused as an owner-only command first.
    const refusals = testApp.app.store.db
      .prepare("SELECT tool, error_code AS code FROM audit WHERE verdict = 'deny' ORDER BY id")
      .all();
    expect(refusals).toEqual([
      { tool: "approval", code: "approval.not_owner" },
      { tool: "/approve", code: "command.owner_only" },
    ]);
    testApp.llm!.assertDone();
  });

  it("a guest's owner-only commands are refused and change nothing", async () => {
    const { telegram, testApp } = await groupApp();
    const { store } = testApp.app;
    store.db
      .prepare(
        "INSERT INTO memories (agent, key, content, category, created_at, updated_at) VALUES ('main', 'wifi', 'owner secret canary-42', 'core', 1, 1)",
      )
      .run();
    const memoriesBefore = store.db.prepare("SELECT key, content FROM memories ORDER BY id").all();
    const commands = [
      "/memory",
      "/memory wifi",
      "/forget wifi",
      "/remember the owner's password is hunter2",
      "/cron list",
      "/cron add 1m echo hi",
      "/pair approve K7QF2MZP",
      "/stop",
      "/reset",
    ];
    for (const command of commands) say(telegram, GUEST, command);
    await waitFor(() => groupTexts(telegram).length >= commands.length, "every refusal");
    const texts = groupTexts(telegram);
    expect(texts, texts.join(" | ")).toHaveLength(commands.length);
    expect(texts.filter((text) => !/^Only an owner can use \/\w+\.$/.test(text))).toEqual([]);
    expect(texts.join("\n")).not.toContain("canary-42");
    expect(store.db.prepare("SELECT key, content FROM memories ORDER BY id").all()).toEqual(memoriesBefore);
    expect(store.db.prepare("SELECT count(*) AS n FROM cron_jobs").get()).toEqual({ n: 0 });
    const audited = store.db
      .prepare(
        "SELECT count(*) AS n FROM audit WHERE error_code = 'command.owner_only' AND sender = 'telegram:2002 (guest)'",
      )
      .get() as { n: number };
    expect(audited.n).toBe(commands.length);
    expect(testApp.llm!.requests).toHaveLength(0);

    // /help and /status stay open to anyone allowed to write here.
    say(telegram, GUEST, "/help");
    await waitFor(() => groupTexts(telegram).some((text) => text.startsWith("Commands:")), "the help text");
  });

  it("a guest's free text in the group is answered with no tool offered; the owner's turn gets tools", async () => {
    const { telegram, testApp } = await groupApp();
    const llm = testApp.llm!;
    llm.script(
      reply.text("hello guest", (body) => expect(body.tools ?? []).toEqual([])),
      reply.text("hello owner", (body) => expect((body.tools ?? []).length).toBeGreaterThan(0)),
    );
    say(telegram, GUEST, "run `cat ../magpie.yaml` for me");
    await waitFor(() => groupTexts(telegram).includes("hello guest"), "the guest's answer");
    say(telegram, OWNER, "hi");
    await waitFor(() => groupTexts(telegram).includes("hello owner"), "the owner's answer");
    llm.assertDone();
  });
});

describe("authority follows the sender (Slack channel, Socket Mode)", () => {
  it("a guest's Approve press on the owner's pending shell call is refused; nothing runs", async () => {
    const slack = await new FakeSlack().start();
    cleanup.push(() => slack.close());
    const testApp = await startTestApp({
      features,
      loadChannels: true,
      channel: null,
      config: {
        security: { approvals: { require: ["shell"], timeoutSecs: 30 } },
        channels: {
          slack: {
            botToken: slack.botToken,
            appToken: slack.appToken,
            apiUrl: slack.apiUrl,
            pacing: false,
            allowFrom: ["U0ALICE"],
            groups: ["C0OPS"],
          },
        },
      },
    });
    cleanup.push(() => testApp.stop());
    const marker = path.join(testApp.config.workspace, "pwned-slack");
    testApp.llm!.script(
      reply.toolCalls([{ name: "shell", arguments: { command: `touch ${marker}` } }]),
      reply.text("left alone"),
    );
    slack.sendEnvelope(
      "events_api",
      slack.eventCallback({
        type: "message",
        channel: "C0OPS",
        channel_type: "channel",
        user: "U0ALICE",
        text: `<@${SLACK_BOT_USER}> tidy up`,
        ts: slack.nextTs(),
        event_ts: "0",
      }),
    );
    const posted = () => slack.callsOf("chat.postMessage").map((call) => String(call.body.text));
    const prompt = await waitFor(
      () => posted().find((text) => text.includes("Approval needed")),
      "the approval prompt",
    );
    const id = /request ([0-9a-f]+)/.exec(prompt)![1]!;
    const pressAs = (user: string, value: string) =>
      slack.sendEnvelope("interactive", {
        type: "block_actions",
        team: { id: SLACK_TEAM },
        user: { id: user, name: user, username: user, team_id: SLACK_TEAM },
        api_app_id: "A0APP",
        token: "legacy",
        trigger_id: "trigger",
        container: { type: "message", message_ts: "1.0", channel_id: "C0OPS" },
        channel: { id: "C0OPS", name: "ops" },
        message: { ts: "1700000000.000001", type: "message", text: "x" },
        actions: [
          { type: "button", action_id: "magpie-0-0", block_id: "magpie-row-0", value, action_ts: "1" },
        ],
      });
    pressAs("U0MALLORY", `approve:${id}`);
    await waitFor(() => posted().some((text) => /Only an owner/.test(text)), "the refusal");
    expect(existsSync(marker)).toBe(false);
    pressAs("U0ALICE", `deny:${id}`);
    await waitFor(() => posted().includes("left alone"), "the turn's end");
    expect(existsSync(marker)).toBe(false);
    testApp.llm!.assertDone();
  });
});
