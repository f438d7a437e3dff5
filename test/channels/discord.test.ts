import { afterEach, describe, expect, it } from "vitest";
import { DiscordChannel } from "../../channels/discord.js";
import { MagpieError } from "../../src/lib/errors.js";
import {
  DISCORD_BOT,
  DISCORD_CHANNEL_ID,
  DISCORD_DM_CHANNEL_ID,
  DISCORD_GUILD_ID,
  DISCORD_THREAD_ID,
  DISCORD_USER,
  FakeDiscord,
} from "../fakes/discord.js";
import { waitFor } from "../fakes/http-util.js";
import { runAdapterContract, type SentRecord } from "./adapter-contract.js";
import { channelDeps, RecordingSink } from "./helpers.js";

const MESSAGES = /^\/channels\/\d+\/messages$/;

function discordAdapter(fake: FakeDiscord, token = fake.validToken) {
  return new DiscordChannel(channelDeps({ discord: { token, apiBase: fake.apiBase, pacing: false } }));
}

function buttonIds(body: Record<string, unknown>): string[] {
  const rows = (body.components as Array<{ components: Array<{ custom_id: string }> }> | undefined) ?? [];
  return rows.flatMap((row) => row.components.map((button) => button.custom_id));
}

runAdapterContract("discord", async () => {
  const fake = await new FakeDiscord().start();
  return {
    adapter: () => discordAdapter(fake),
    adapterWithWrongToken: () => discordAdapter(fake, "WRONG.TOKEN"),
    tokenEnvVar: "DISCORD_BOT_TOKEN",
    maxMessageLength: 2000,
    renderedBold: "**answer**",
    skips: { formatting: "Discord has no parse mode: Markdown content is never rejected as formatting" },
    directChatId: DISCORD_DM_CHANNEL_ID,
    groupChatId: DISCORD_CHANNEL_ID,
    sendDirect: async (text) => {
      fake.sendMessage({ content: text });
    },
    sendGroup: async (text, { mention, fromBot }) => {
      fake.sendMessage({
        content: mention ? `<@${DISCORD_BOT.id}> ${text}` : text,
        guild: true,
        author: fromBot ? { ...DISCORD_USER, id: "100000000000000077", bot: true } : DISCORD_USER,
        mentions: mention ? [DISCORD_BOT] : [],
      });
    },
    sent: (): SentRecord[] =>
      fake.callsOf("POST", MESSAGES).map((call) => ({
        chatId: call.path.split("/")[2]!,
        text: String(call.body.content),
        replyTo: (call.body.message_reference as { message_id?: string } | undefined)?.message_id,
        formatted: true,
        buttons: buttonIds(call.body),
      })),
    failNextSend: () =>
      fake.failNext(
        "POST",
        MESSAGES,
        429,
        { message: "You are being rate limited.", retry_after: 0.05, global: false },
        { "retry-after": "0.05" },
      ),
    failNextEdit: () =>
      fake.failNext("PATCH", /^\/channels\/\d+\/messages\/\d+$/, 404, {
        message: "Unknown Message",
        code: 10008,
      }),
    pressButton: async (buttonId) => {
      const last = fake.callsOf("POST", MESSAGES).at(-1)!;
      fake.pressButton(buttonId, "500000000000000999", last.path.split("/")[2]!);
    },
    typingCount: () => fake.callsOf("POST", /\/typing$/).length,
    edits: () =>
      fake.callsOf("PATCH", /^\/channels\/\d+\/messages\/\d+$/).map((call) => ({
        messageId: call.path.split("/")[4]!,
        text: String(call.body.content),
      })),
    dropConnections: async (dropping) => fake.setDropping(dropping),
    close: () => fake.close(),
  };
});

describe("discord specifics", () => {
  let cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const task of cleanup.reverse()) await task();
    cleanup = [];
  });

  async function started() {
    const fake = await new FakeDiscord().start();
    const adapter = discordAdapter(fake);
    const sink = new RecordingSink();
    cleanup.push(
      () => fake.close(),
      () => adapter.stop(),
    );
    await adapter.start(sink);
    return { fake, adapter, sink };
  }

  it("names the key when the gateway closes with 4004", async () => {
    const fake = await new FakeDiscord().start();
    cleanup.push(() => fake.close());
    fake.restAcceptsAnyToken = true;
    const adapter = discordAdapter(fake, "WRONG.BUT.ACCEPTED.BY.REST");
    cleanup.push(() => adapter.stop());
    const error = await adapter.start(new RecordingSink()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MagpieError);
    expect((error as Error).message).toMatch(/4004.*DISCORD_BOT_TOKEN/);
    expect(adapter.status()).toMatchObject({ state: "failed" });
  });

  it("normalizes threads, guild ids, replies to the bot and attachments", async () => {
    const { fake, adapter, sink } = await started();
    fake.cdnFiles.set("a/log.txt", Buffer.from("log body"));
    fake.sendMessage({
      content: "look at this",
      guild: true,
      channelId: DISCORD_THREAD_ID,
      referenced: {
        id: "500000000000000111",
        channel_id: DISCORD_THREAD_ID,
        author: DISCORD_BOT,
        content: "earlier",
        timestamp: new Date().toISOString(),
        edited_timestamp: null,
        tts: false,
        mention_everyone: false,
        mentions: [],
        mention_roles: [],
        attachments: [],
        embeds: [],
        pinned: false,
        type: 0,
      },
      mentions: [DISCORD_BOT],
      attachments: [
        {
          id: "600000000000000001",
          filename: "log.txt",
          size: 8,
          url: `${fake.apiBase.replace(/\/api$/, "")}/cdn/a/log.txt`,
          proxy_url: "",
          content_type: "text/plain",
        },
      ],
    });
    const inbound = await waitFor(() => sink.messages[0], "thread message");
    expect(inbound).toMatchObject({
      chatId: DISCORD_CHANNEL_ID,
      threadId: DISCORD_THREAD_ID,
      guildId: DISCORD_GUILD_ID,
      isDirect: false,
      mentionsBot: true,
      replyTo: { messageId: "500000000000000111", fromBot: true },
      attachments: [{ kind: "file", name: "log.txt", mime: "text/plain", size: 8 }],
    });
    expect((await adapter.download!(inbound.attachments[0]!)).toString()).toBe("log body");
    await adapter.send(
      { channel: "discord", chatId: inbound.chatId, threadId: inbound.threadId },
      { text: "in thread" },
    );
    expect(fake.callsOf("POST", MESSAGES).at(-1)?.path).toBe(`/channels/${DISCORD_THREAD_ID}/messages`);
  });

  it("sends with mentions disabled so replies can never ping @everyone", async () => {
    const { fake, adapter } = await started();
    await adapter.send({ channel: "discord", chatId: DISCORD_CHANNEL_ID }, { text: "@everyone hi" });
    expect(fake.callsOf("POST", MESSAGES)[0]?.body.allowed_mentions).toEqual({ parse: [] });
  });

  it("maps a 403 to a permanent error", async () => {
    const { fake, adapter } = await started();
    fake.failNext("POST", MESSAGES, 403, { message: "Missing Access", code: 50001 });
    const error = await adapter
      .send({ channel: "discord", chatId: DISCORD_CHANNEL_ID }, { text: "x" })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ permanent: true });
  });
});

describe("discord rate limits", () => {
  it("hands a 429 back to the outbox with the server's retry-after instead of waiting inside discord.js", async () => {
    const fake = await new FakeDiscord().start();
    const adapter = discordAdapter(fake);
    try {
      await adapter.start(new RecordingSink());
      fake.failNext(
        "POST",
        MESSAGES,
        429,
        { message: "rate limited", retry_after: 2.5, global: false },
        { "retry-after": "2.5" },
      );
      const error = await adapter
        .send({ channel: "discord", chatId: DISCORD_CHANNEL_ID }, { text: "x" })
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ name: "ChannelSendError", permanent: false });
      // @discordjs/rest adds its 50 ms safety offset to the server's Retry-After.
      expect((error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThanOrEqual(2500);
      expect(fake.callsOf("POST", MESSAGES)).toHaveLength(0);
    } finally {
      await adapter.stop();
      await fake.close();
    }
  });
});
