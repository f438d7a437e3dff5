import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { ConsoleChannel } from "../../channels/console.js";
import { type PartSender, sendParts } from "../../channels/send-parts.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import type { ToolCallContext } from "../../src/core/tool-runtime.js";
import type { ReplyTarget } from "../../src/core/types.js";
import { DISCORD_DM_CHANNEL_ID, FakeDiscord } from "../fakes/discord.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * Media out: the `message` tool with a workspace file, through the durable outbox, to the real grammY /
 * discord.js / Bolt clients talking to the platform fakes.
 */

/** A real 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);
const TEXT = "disk usage report\n/ 42%\n";
const TELEGRAM_CHAT = "777";
const SLACK_CHANNEL = "C0OPS";

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

interface Platforms {
  telegram: FakeTelegram;
  discord: FakeDiscord;
  slack: FakeSlack;
  testApp: TestApp;
  /** Calls the `message` tool in the chat `target` (its owner's own chat); returns the parsed result. */
  message(target: ReplyTarget, args: Record<string, unknown>): Promise<Record<string, unknown>>;
}

async function platforms(): Promise<Platforms> {
  const telegram = await new FakeTelegram().start();
  const discord = await new FakeDiscord().start();
  const slack = await new FakeSlack().start();
  cleanup.push(
    () => telegram.close(),
    () => discord.close(),
    () => slack.close(),
  );
  const testApp = await startTestApp({
    features: [schedulerFeature],
    loadChannels: true,
    channel: null,
    llm: false,
    config: {
      channels: {
        telegram: { token: telegram.validToken, apiRoot: telegram.apiRoot, pacing: false },
        discord: { token: discord.validToken, apiBase: discord.apiBase },
        slack: {
          botToken: slack.botToken,
          appToken: slack.appToken,
          apiUrl: slack.apiUrl,
          pacing: false,
        },
      },
    },
  });
  cleanup.push(() => testApp.stop());
  await waitFor(
    () => [...testApp.app.adapters.values()].every((adapter) => adapter.status().state === "connected"),
    "channels connected",
  );
  mkdirSync(testApp.config.workspace, { recursive: true });
  writeFileSync(path.join(testApp.config.workspace, "chart.png"), PNG);
  writeFileSync(path.join(testApp.config.workspace, "report.txt"), TEXT);
  let calls = 0;
  return {
    telegram,
    discord,
    slack,
    testApp,
    async message(target, args) {
      const context: ToolCallContext = ownerCallContext(target);
      const text = await testApp.app.tools.execute(
        {
          id: `call-${++calls}`,
          type: "function",
          function: { name: "message", arguments: JSON.stringify(args) },
        },
        ["message"],
        context,
      );
      return JSON.parse(text) as Record<string, unknown>;
    },
  };
}

const telegramChat: ReplyTarget = { channel: "telegram", chatId: TELEGRAM_CHAT };
const discordChat: ReplyTarget = { channel: "discord", chatId: DISCORD_DM_CHANNEL_ID };
const slackChat: ReplyTarget = { channel: "slack", chatId: SLACK_CHANNEL };

describe("media out: message with a file", () => {
  it("Telegram: a PNG goes as sendPhoto with its bytes (multipart) and the text as caption; a text file as sendDocument", async () => {
    const { telegram, message } = await platforms();
    expect(await message(telegramChat, { content: "**CPU** chart", file: "chart.png" })).toMatchObject({
      ok: true,
      status: "sent",
      file: { name: "chart.png", sent_as: "photo" },
    });
    const [photo] = telegram.callsOf("sendPhoto");
    expect(photo!.body).toMatchObject({
      chat_id: TELEGRAM_CHAT,
      caption: "<b>CPU</b> chart",
      parse_mode: "HTML",
    });
    expect(photo!.uploads?.photo?.content.equals(PNG)).toBe(true);
    expect(photo!.uploads?.photo?.filename).toBe("chart.png");

    expect(await message(telegramChat, { content: "The report", file: "report.txt" })).toMatchObject({
      ok: true,
      file: { sent_as: "document" },
    });
    const [document] = telegram.callsOf("sendDocument");
    expect(document!.uploads?.document?.content.toString()).toBe(TEXT);
    expect(document!.body).toMatchObject({ caption: "The report" });
    expect(telegram.callsOf("sendMessage")).toHaveLength(0);
  });

  it("Telegram: a 429 on sendPhoto is retried by the outbox and the photo arrives once", async () => {
    const { telegram, message } = await platforms();
    telegram.failNext("sendPhoto", 429, "Too Many Requests: retry after 1", 1);
    expect(await message(telegramChat, { content: "chart", file: "chart.png" })).toMatchObject({
      ok: true,
      status: "sent",
    });
    const delivered = telegram.callsOf("sendPhoto").filter((call) => !call.failed);
    expect(delivered).toHaveLength(1);
    expect(telegram.callsOf("sendPhoto")).toHaveLength(2);
  });

  it("Telegram: text longer than a caption goes first as a message, then the file alone", async () => {
    const { telegram, message } = await platforms();
    const long = "word ".repeat(400).trim();
    await message(telegramChat, { content: long, file: "chart.png" });
    expect(telegram.sentTexts()).toEqual([long]);
    const [photo] = telegram.callsOf("sendPhoto");
    expect(photo!.body.caption).toBeUndefined();
  });

  it("Telegram: a retry resumes after the parts already delivered: the text is not sent twice", async () => {
    const { telegram, message } = await platforms();
    const long = "word ".repeat(400).trim();
    telegram.failNext("sendPhoto", 429, "Too Many Requests: retry after 1", 1);
    expect(await message(telegramChat, { content: long, file: "chart.png" })).toMatchObject({
      status: "sent",
    });
    expect(telegram.sentTexts()).toEqual([long]);
    expect(telegram.callsOf("sendPhoto").filter((call) => !call.failed)).toHaveLength(1);
  });

  it("Discord: a message with the PNG as its attachment", async () => {
    const { discord, message } = await platforms();
    expect(await message(discordChat, { content: "CPU chart", file: "chart.png" })).toMatchObject({
      ok: true,
      status: "sent",
    });
    const [sent] = discord.callsOf("POST", /^\/channels\/\d+\/messages$/);
    expect(sent!.path).toBe(`/channels/${DISCORD_DM_CHANNEL_ID}/messages`);
    expect(sent!.body).toMatchObject({
      content: "CPU chart",
      attachments: [{ id: 0, filename: "chart.png" }],
      allowed_mentions: { parse: [] },
    });
    const file = Object.values(sent!.uploads ?? {})[0];
    expect(file?.filename).toBe("chart.png");
    expect(file?.content.equals(PNG)).toBe(true);
  });

  it("Slack: getUploadURLExternal → upload → completeUploadExternal shares the file in the channel", async () => {
    const { slack, message } = await platforms();
    expect(await message(slackChat, { content: "CPU *chart*", file: "chart.png" })).toMatchObject({
      ok: true,
      status: "sent",
    });
    expect(slack.callsOf("files.getUploadURLExternal")[0]!.body).toMatchObject({
      filename: "chart.png",
      length: String(PNG.length),
    });
    expect(slack.shared).toHaveLength(1);
    expect(slack.shared[0]).toMatchObject({
      filename: "chart.png",
      title: "chart.png",
      channel: SLACK_CHANNEL,
      initialComment: "CPU _chart_",
    });
    expect(slack.shared[0]!.content.equals(PNG)).toBe(true);
    expect(slack.callsOf("chat.postMessage")).toHaveLength(0);
  });

  it("Slack: a 429 on the upload is retried and the file is shared exactly once", async () => {
    const { slack, message } = await platforms();
    slack.failNext("upload", 429, "rate limited", 1);
    expect(await message(slackChat, { content: "report", file: "report.txt" })).toMatchObject({
      ok: true,
      status: "sent",
    });
    expect(slack.uploadAttempts).toBe(2);
    expect(slack.shared).toHaveLength(1);
    expect(slack.shared[0]!.content.toString()).toBe(TEXT);
  });

  it("Slack: a 429 on completeUploadExternal is retried and the file is shared exactly once", async () => {
    const { slack, message } = await platforms();
    slack.failNext("files.completeUploadExternal", 429, "ratelimited", 1);
    await message(slackChat, { content: "report", file: "report.txt" });
    await waitFor(() => slack.shared.length > 0, "the shared file");
    expect(slack.shared).toHaveLength(1);
    expect(slack.callsOf("files.getUploadURLExternal")).toHaveLength(2);
  });

  it("refuses Magpie's own state, paths outside the workspace and missing files; nothing is sent", async () => {
    const { telegram, discord, slack, testApp, message } = await platforms();
    const refused = async (file: string, code: string | RegExp) => {
      const result = await message(telegramChat, { content: "here", file });
      expect(result).toMatchObject({ error: { code } });
    };
    await refused(path.join(testApp.dataDir, "magpie.db"), "file.magpie_state");
    await refused("/etc/hostname", "file.system_path_read");
    await refused("../magpie.db", "file.magpie_state");
    await refused("missing.png", "file.not_found");
    expect(
      await message(slackChat, { content: "here", file: path.join(testApp.dataDir, "magpie.db") }),
    ).toMatchObject({ error: { code: "file.magpie_state" } });
    // Another chat than this one is refused by the usual rule before the file is even looked at.
    expect(await message(telegramChat, { content: "here", chat_id: "999", file: "chart.png" })).toMatchObject(
      { error: { code: "message.chat_not_allowed" } },
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(telegram.calls.filter((call) => /^send/.test(call.method))).toHaveLength(0);
    expect(discord.callsOf("POST", /messages$/)).toHaveLength(0);
    expect(slack.callsOf("files.getUploadURLExternal")).toHaveLength(0);
  });

  it("caps the size per channel before queueing; an image too large for a photo goes as a document", async () => {
    const { telegram, discord, testApp, message } = await platforms();
    const big = path.join(testApp.config.workspace, "big.png");
    writeFileSync(big, PNG);
    truncateSync(big, 26 * 1024 * 1024);
    expect(await message(discordChat, { content: "big", file: "big.png" })).toMatchObject({
      error: {
        code: "message.file_too_large",
        message: expect.stringMatching(/discord takes files up to 25\.0 MB/),
      },
    });
    expect(discord.callsOf("POST", /messages$/)).toHaveLength(0);
    expect(await message(telegramChat, { content: "big", file: "big.png" })).toMatchObject({
      ok: true,
      file: { sent_as: "document" },
    });
    expect(telegram.callsOf("sendDocument")[0]!.uploads?.document?.content.length).toBe(26 * 1024 * 1024);
  });
});

describe("media out: console", () => {
  it("prints the file's path under the text", async () => {
    const output = new PassThrough();
    let printed = "";
    output.on("data", (chunk) => {
      printed += String(chunk);
    });
    const terminal = new ConsoleChannel({ input: new PassThrough(), output, color: false });
    await terminal.send(
      { channel: "console", chatId: "local" },
      { text: "the chart", file: { path: "/work/space/chart.png", name: "chart.png", kind: "photo" } },
    );
    expect(printed).toContain("magpie> the chart\n[photo: /work/space/chart.png]\n");
  });
});

describe("media out: steps of a send", () => {
  const file = { path: "/w/chart.png", name: "chart.png", kind: "photo" as const };
  const target = { channel: "x", chatId: "1" };
  function recorder(filesTakeButtons: boolean) {
    const log: string[] = [];
    const sender: PartSender<string> = {
      limit: 100,
      render: (text) => text,
      markup: (rows) =>
        rows
          .flat()
          .map((button) => button.id)
          .join(","),
      edit: async () => undefined,
      post: async (part, markup) => {
        log.push(`text:${part.plain}${markup ? ` [${markup}]` : ""}`);
        return `m${log.length}`;
      },
      postFile: async (_file, caption, markup) => {
        log.push(`file${caption ? `:${caption.plain}` : ""}${markup ? ` [${markup}]` : ""}`);
        return `m${log.length}`;
      },
      captionLimit: 50,
      filesTakeButtons,
    };
    return { log, sender };
  }
  const buttons = [[{ id: "yes", label: "Yes" }]];

  it("puts a short text on the file as its caption, with the buttons", async () => {
    const { log, sender } = recorder(true);
    await sendParts(target, { text: "hi", file, buttons }, sender);
    expect(log).toEqual(["file:hi [yes]"]);
  });

  it("keeps the buttons on the text where files cannot carry them (Slack)", async () => {
    const { log, sender } = recorder(false);
    await sendParts(target, { text: "hi", file, buttons }, sender);
    expect(log).toEqual(["text:hi [yes]", "file"]);
  });

  it("resumes after the delivered text: only the file is sent again", async () => {
    const { log, sender } = recorder(true);
    const long = "word ".repeat(14).trim(); // over the caption limit (50), one part (100)
    const result = await sendParts(target, { text: long, file }, sender, {
      partsSent: 1,
      onPartSent: () => undefined,
    });
    expect(log).toEqual(["file"]);
    expect(result.messageIds).toEqual(["m1"]);
  });
});
