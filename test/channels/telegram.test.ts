import { afterEach, describe, expect, it } from "vitest";
import { TelegramChannel } from "../../channels/telegram.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeTelegram, TELEGRAM_BOT } from "../fakes/telegram.js";
import { runAdapterContract, type SentRecord } from "./adapter-contract.js";
import { channelDeps, RecordingSink, RouteServer } from "./helpers.js";

const USER = { id: 777, first_name: "Alice", username: "alice" };
const GROUP = { id: -1001, type: "supergroup" as const, title: "Ops" };

function telegramAdapter(fake: FakeTelegram, extra: Record<string, unknown> = {}, http = new RouteServer()) {
  return new TelegramChannel(
    channelDeps(
      { telegram: { token: fake.validToken, apiRoot: fake.apiRoot, pacing: false, ...extra } },
      http,
    ),
  );
}

function buttonsOf(body: Record<string, unknown>): string[] {
  const markup = body.reply_markup as
    | { inline_keyboard?: Array<Array<{ callback_data: string }>> }
    | undefined;
  return markup?.inline_keyboard?.flat().map((button) => button.callback_data) ?? [];
}

runAdapterContract("telegram", async () => {
  const fake = await new FakeTelegram().start();
  return {
    adapter: () => telegramAdapter(fake),
    adapterWithWrongToken: () =>
      new TelegramChannel(
        channelDeps({ telegram: { token: "999:WRONG", apiRoot: fake.apiRoot, pacing: false } }),
      ),
    tokenEnvVar: "TELEGRAM_BOT_TOKEN",
    maxMessageLength: 4096,
    renderedBold: "<b>answer</b>",
    directChatId: String(USER.id),
    groupChatId: String(GROUP.id),
    sendDirect: async (text) => {
      fake.pushMessage({ chat: { id: USER.id, type: "private" }, from: USER, text });
    },
    sendGroup: async (text, { mention, fromBot }) => {
      const body = mention ? `@${TELEGRAM_BOT.username} ${text}` : text;
      fake.pushMessage({
        chat: GROUP,
        from: fromBot ? { id: 555, first_name: "OtherBot", is_bot: true } : USER,
        text: body,
        entities: mention
          ? [{ type: "mention", offset: 0, length: TELEGRAM_BOT.username.length + 1 }]
          : undefined,
      });
    },
    sent: (): SentRecord[] =>
      fake
        .callsOf("sendMessage")
        .filter((call) => !call.failed)
        .map((call) => ({
          chatId: String(call.body.chat_id),
          text: String(call.body.text),
          replyTo: (
            call.body.reply_parameters as { message_id?: number } | undefined
          )?.message_id?.toString(),
          formatted: call.body.parse_mode === "HTML",
          buttons: buttonsOf(call.body),
        })),
    failNextSend: (kind) =>
      kind === "rate-limit"
        ? fake.failNext("sendMessage", 429, "Too Many Requests: retry after 1", 1)
        : fake.failNext(
            "sendMessage",
            400,
            'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 5',
          ),
    failNextEdit: () => fake.failNext("editMessageText", 400, "Bad Request: message to edit not found"),
    pressButton: async (buttonId) => {
      const last = fake
        .callsOf("sendMessage")
        .filter((call) => !call.failed)
        .at(-1)!;
      fake.pushUpdate({
        callback_query: {
          id: "cb1",
          from: { ...USER, is_bot: false },
          chat_instance: "ci",
          data: buttonId,
          message: { message_id: 1, date: 0, chat: { id: last.body.chat_id, type: "private" }, text: "x" },
        },
      });
    },
    typingCount: () => fake.callsOf("sendChatAction").length,
    edits: () =>
      fake
        .callsOf("editMessageText")
        .map((call) => ({ messageId: String(call.body.message_id), text: String(call.body.text) })),
    dropConnections: async (dropping) => {
      fake.dropping = dropping;
    },
    close: () => fake.close(),
  };
});

describe("telegram specifics", () => {
  let fake: FakeTelegram;
  let cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const task of cleanup.reverse()) await task();
    cleanup = [];
  });

  async function started(extra: Record<string, unknown> = {}, http = new RouteServer()) {
    fake = await new FakeTelegram().start();
    const adapter = telegramAdapter(fake, extra, http);
    const sink = new RecordingSink();
    cleanup.push(
      () => fake.close(),
      () => adapter.stop(),
    );
    await adapter.start(sink);
    return { adapter, sink };
  }

  it("acknowledges the update offset only after the inbox write finished", async () => {
    const { adapter, sink } = await started();
    await waitFor(() => adapter.status().state === "connected", "connected");
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    sink.beforeAccept = () => held;
    const updateId = fake.pushUpdate({
      message: {
        message_id: 9,
        date: 0,
        chat: { id: USER.id, type: "private" },
        from: { ...USER, is_bot: false },
        text: "durable",
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fake.acknowledgedOffset).toBeLessThanOrEqual(updateId);
    expect(sink.messages).toHaveLength(0);
    release();
    await waitFor(() => fake.acknowledgedOffset > updateId, "offset advanced past the update");
    expect(sink.messages.map((message) => message.text)).toEqual(["durable"]);
  });

  it("normalizes topics, replies to the bot, and attachments with a download", async () => {
    const { adapter, sink } = await started();
    fake.files.set("FILE1", { path: "documents/report.txt", content: Buffer.from("report body") });
    fake.pushMessage({
      chat: { ...GROUP, is_forum: true },
      from: USER,
      threadId: 12,
      replyTo: { message_id: 3, date: 0, chat: GROUP, from: { ...TELEGRAM_BOT }, text: "earlier answer" },
      extra: {
        caption: "see file",
        document: {
          file_id: "FILE1",
          file_unique_id: "u1",
          file_name: "report.txt",
          mime_type: "text/plain",
          file_size: 11,
        },
      },
    });
    const inbound = await waitFor(() => sink.messages[0], "inbound");
    expect(inbound).toMatchObject({
      threadId: "12",
      text: "see file",
      mentionsBot: true,
      replyTo: { fromBot: true, text: "earlier answer" },
      attachments: [{ kind: "file", id: "FILE1", name: "report.txt", mime: "text/plain", size: 11 }],
    });
    const bytes = await adapter.download!(inbound.attachments[0]!);
    expect(bytes.toString()).toBe("report body");
  });

  it("renders Markdown to Telegram HTML with escaping", async () => {
    const { adapter } = await started();
    await adapter.send(
      { channel: "telegram", chatId: "777" },
      { text: "a < b & **bold** `x<y`\n```py\nif a<b: pass\n```" },
    );
    const [call] = fake.callsOf("sendMessage");
    expect(call?.body.text).toBe(
      'a &lt; b &amp; <b>bold</b> <code>x&lt;y</code>\n<pre><code class="language-py">if a&lt;b: pass</code></pre>',
    );
  });

  it("maps other 4xx to permanent errors", async () => {
    const { adapter } = await started();
    fake.failNext("sendMessage", 403, "Forbidden: bot was blocked by the user");
    const error = await adapter
      .send({ channel: "telegram", chatId: "777" }, { text: "hi" })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ permanent: true });
  });

  it("serves the webhook with the secret-token header and refuses forged updates", async () => {
    const http = new RouteServer();
    const { adapter, sink } = await started({ mode: "webhook", webhookSecret: "s3cret-token" }, http);
    const base = await http.start();
    cleanup.push(() => http.close());
    expect(adapter.status().state).toBe("connected");
    const update = {
      update_id: 77,
      message: {
        message_id: 1,
        date: 0,
        chat: { id: USER.id, type: "private" },
        from: { ...USER, is_bot: false },
        text: "via webhook",
      },
    };
    const forged = await fetch(`${base}/telegram/webhook`, {
      method: "POST",
      body: JSON.stringify(update),
      headers: { "content-type": "application/json" },
    });
    expect(forged.status).toBe(401);
    const wrong = await fetch(`${base}/telegram/webhook`, {
      method: "POST",
      body: JSON.stringify(update),
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "nope" },
    });
    expect(wrong.status).toBe(401);
    expect(sink.messages).toHaveLength(0);
    const good = await fetch(`${base}/telegram/webhook`, {
      method: "POST",
      body: JSON.stringify(update),
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "s3cret-token" },
    });
    expect(good.status).toBe(200);
    expect(sink.messages.map((message) => message.text)).toEqual(["via webhook"]);
    expect(fake.callsOf("getUpdates")).toHaveLength(0);
  });

  it("maps button ids longer than Telegram's 64-byte callback_data and back", async () => {
    const { adapter, sink } = await started();
    const longId = `ask:${"choice-".repeat(15)}`;
    await adapter.send(
      { channel: "telegram", chatId: "777" },
      { text: "Pick", buttons: [[{ id: longId, label: "That one" }]] },
    );
    const [data] = buttonsOf(fake.callsOf("sendMessage")[0]!.body);
    expect(Buffer.byteLength(data!)).toBeLessThanOrEqual(64);
    fake.pushUpdate({
      callback_query: {
        id: "cb9",
        from: { ...USER, is_bot: false },
        chat_instance: "ci",
        data,
        message: { message_id: 1, date: 0, chat: { id: USER.id, type: "private" }, text: "Pick" },
      },
    });
    const press = await waitFor(() => sink.presses[0], "press");
    expect(press.buttonId).toBe(longId);
  });

  it("refuses webhook mode without a secret", () => {
    expect(() => new TelegramChannel(channelDeps({ telegram: { token: "1:x", mode: "webhook" } }))).toThrow(
      /webhookSecret/,
    );
  });
});
