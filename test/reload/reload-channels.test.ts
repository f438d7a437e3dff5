import { afterEach, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import type { InboundMessage } from "../../src/core/types.js";
import { DISCORD_DM_CHANNEL_ID, DISCORD_USER, FakeDiscord } from "../fakes/discord.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp, testConfig } from "../helpers/harness.js";

/**
 * Channels across a config reload, with the real grammY and discord.js clients against the fakes: added, removed,
 * restarted only when their connection changed; replies waiting for a removed channel stay pending; a Telegram
 * update in flight during a restart is answered exactly once. No LLM: each free-text message gets one reply saying
 * how to set one up.
 */

const OWNER = { id: 777, first_name: "Alice" };
let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

interface Rig {
  testApp: TestApp;
  telegram: FakeTelegram;
  discord: FakeDiscord;
  telegramSection: (extra?: Record<string, unknown>) => Record<string, unknown>;
  discordSection: (extra?: Record<string, unknown>) => Record<string, unknown>;
  reload: (channels: Record<string, unknown>) => ReturnType<TestApp["app"]["reload"]>;
  readyz: () => Promise<{ status: number; body: { channels: Record<string, { state: string }> } }>;
}

async function rig(): Promise<Rig> {
  const [telegram, discord] = await Promise.all([new FakeTelegram().start(), new FakeDiscord().start()]);
  cleanup.push(
    () => telegram.close(),
    () => discord.close(),
  );
  const telegramSection = (extra: Record<string, unknown> = {}) => ({
    token: telegram.validToken,
    apiRoot: telegram.apiRoot,
    pacing: false,
    allowFrom: [OWNER.id],
    ...extra,
  });
  const discordSection = (extra: Record<string, unknown> = {}) => ({
    token: discord.validToken,
    apiBase: discord.apiBase,
    allowFrom: [DISCORD_USER.id],
    ...extra,
  });
  const testApp = await startTestApp({
    llm: false,
    features: [accessFeature],
    loadChannels: true,
    channel: null,
    config: { channels: { telegram: telegramSection() } },
  });
  cleanup.push(() => testApp.stop());
  return {
    testApp,
    telegram,
    discord,
    telegramSection,
    discordSection,
    reload: (channels) => testApp.app.reload(testConfig({ channels } as ConfigInput, testApp.dataDir, {})),
    readyz: async () => {
      const response = await fetch(`${testApp.url}/readyz`);
      return { status: response.status, body: (await response.json()) as never };
    },
  };
}

const dm = (telegram: FakeTelegram, text: string) =>
  telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text });
const telegramReplies = (telegram: FakeTelegram) =>
  telegram
    .callsOf("sendMessage")
    .filter((call) => !call.failed && String(call.body.chat_id) === String(OWNER.id));
const discordSends = (discord: FakeDiscord) => discord.callsOf("POST", /^\/channels\/\d+\/messages$/);

describe("reload: channels", () => {
  it("adds a channel (it answers, /readyz lists it) and removes one (stopped, gone from /readyz)", async () => {
    const { testApp, discord, telegramSection, discordSection, reload, readyz } = await rig();
    expect(Object.keys((await readyz()).body.channels)).toEqual(["telegram"]);

    const added = await reload({ telegram: telegramSection(), discord: discordSection() });
    expect(added.failures).toEqual([]);
    expect(await readyz()).toMatchObject({
      status: 200,
      body: { channels: { telegram: { state: "connected" }, discord: { state: "connected" } } },
    });
    discord.sendMessage({ content: "hello from discord" });
    await waitFor(() => discordSends(discord).length === 1, "the new channel's answer");

    const removed = await reload({ telegram: telegramSection() });
    expect(removed.failures).toEqual([]);
    expect(Object.keys((await readyz()).body.channels)).toEqual(["telegram"]);
    expect(testApp.app.adapters.has("discord")).toBe(false);
    discord.sendMessage({ content: "anyone?" });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(discordSends(discord)).toHaveLength(1);
  });

  it("keeps a removed channel's replies pending (no attempt counted) and delivers them when it comes back", async () => {
    const { testApp, discord, telegramSection, discordSection, reload } = await rig();
    await reload({ telegram: telegramSection(), discord: discordSection() });
    await reload({ telegram: telegramSection() });

    const outboxId = testApp.app.router.send(
      { channel: "discord", chatId: DISCORD_DM_CHANNEL_ID },
      { text: "kept for later" },
      "notice",
    );
    await waitFor(() => testApp.app.store.outbox.get(outboxId)?.lastError != null, "a delivery pass");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(testApp.app.store.outbox.get(outboxId)).toMatchObject({
      status: "pending",
      attempts: 0,
      lastError: expect.stringMatching(/Channel "discord" is not running; kept until it is/),
    });

    await reload({ telegram: telegramSection(), discord: discordSection() });
    await waitFor(
      () => testApp.app.store.outbox.get(outboxId)?.status === "sent",
      "delivery after the return",
    );
    expect(discordSends(discord).map((call) => (call.body as { content?: string }).content)).toEqual([
      "kept for later",
    ]);
  });

  it("an access-only change keeps the connection; a connection change restarts; a rejected token keeps the old settings", async () => {
    const { testApp, telegram, telegramSection, reload } = await rig();
    const first = testApp.app.adapters.get("telegram");

    const access = await reload({
      telegram: telegramSection({ allowFrom: [OWNER.id, 999], dmPolicy: "allowlist" }),
    });
    expect(access.failures).toEqual([]);
    expect(testApp.app.adapters.get("telegram")).toBe(first);

    const reconnect = await reload({ telegram: telegramSection({ pacing: true }) });
    expect(reconnect.failures).toEqual([]);
    const second = testApp.app.adapters.get("telegram");
    expect(second).not.toBe(first);
    expect(first!.status().state).toBe("stopped");
    dm(telegram, "after the restart");
    await waitFor(() => telegramReplies(telegram).length === 1, "an answer from the restarted adapter");

    const rejected = await reload({ telegram: telegramSection({ token: "999:REVOKED" }) });
    expect(rejected.failures).toEqual([
      {
        part: "channels.telegram",
        error: expect.stringMatching(/Telegram rejected the token \(401\).*previous settings run again/),
      },
    ]);
    await waitFor(
      () => testApp.app.adapters.get("telegram")?.status().state === "connected",
      "the old settings",
    );
    dm(telegram, "still there?");
    await waitFor(() => telegramReplies(telegram).length === 2, "an answer on the previous settings");
  });

  it("attack: after a webhook secret is rotated by a reload, the old secret is refused (401); a removed channel's route is gone (404)", async () => {
    const { testApp, telegram, telegramSection, reload } = await rig();
    const webhook = (secret: string) => telegramSection({ mode: "webhook", webhookSecret: secret });
    await reload({ telegram: webhook("old-hook-secret") });
    const update = (id: number, text: string) =>
      JSON.stringify({
        update_id: id,
        message: {
          message_id: id,
          date: Math.floor(Date.now() / 1000),
          chat: { id: OWNER.id, type: "private" },
          from: { ...OWNER, is_bot: false },
          text,
        },
      });
    const post = (body: string, secret: string) =>
      fetch(`${testApp.url}/telegram/webhook`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
      });
    expect((await post(update(1, "first"), "old-hook-secret")).status).toBe(200);

    // The rotated secret: the server's router keeps the first handler of a path, so without the channels' route
    // table the stopped adapter (with the old secret) would still take the updates.
    const rotated = await reload({ telegram: webhook("new-hook-secret") });
    expect(rotated.failures).toEqual([]);
    expect((await post(update(2, "forged"), "old-hook-secret")).status).toBe(401);
    expect((await post(update(3, "real"), "new-hook-secret")).status).toBe(200);

    await reload({});
    expect((await post(update(4, "late"), "new-hook-secret")).status).toBe(404);
    await waitFor(() => telegramReplies(telegram).length === 2, "answers to the two accepted updates");
    const stored = testApp.app.store.db
      .prepare("SELECT message_id FROM inbox WHERE channel = 'telegram' ORDER BY id")
      .pluck()
      .all();
    expect(stored).toEqual([`${OWNER.id}:1`, `${OWNER.id}:3`]);
  });

  it("a Discord restart misses nothing: messages sent all through it are each stored once", async () => {
    const { testApp, discord, telegramSection, discordSection, reload } = await rig();
    await reload({ telegram: telegramSection(), discord: discordSection() });
    const first = testApp.app.adapters.get("discord");
    // The gateway replays nothing to a new session: a message is seen only by a connection that is up.
    const sent: string[] = [];
    let streaming = true;
    const stream = (async () => {
      while (streaming) {
        sent.push(discord.sendMessage({ content: `tick ${sent.length}` }));
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const restarted = await reload({
      telegram: telegramSection(),
      discord: discordSection({ pacing: false }),
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    streaming = false;
    await stream;
    expect(restarted.failures).toEqual([]);
    expect(testApp.app.adapters.get("discord")).not.toBe(first);
    const stored = () =>
      testApp.app.store.db
        .prepare("SELECT message_id FROM inbox WHERE channel = 'discord' ORDER BY id")
        .pluck()
        .all() as string[];
    await waitFor(() => stored().length >= sent.length, "every message stored", 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect([...stored()].sort()).toEqual([...sent].sort());
  });

  it("a Telegram update in flight during a restart is neither lost nor answered twice", async () => {
    const { testApp, telegram, telegramSection, reload } = await rig();
    // Hold every inbound message at the router's door: the old poller is mid-batch when the restart comes.
    const router = testApp.app.router;
    const original = router.message.bind(router);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const seen: string[] = [];
    router.message = async (inbound: InboundMessage) => {
      seen.push(inbound.messageId);
      await gate;
      return original(inbound);
    };
    const ids = [dm(telegram, "one"), dm(telegram, "two"), dm(telegram, "three")];
    await waitFor(() => seen.length === 1, "the first update in flight");

    const restarted = await reload({ telegram: telegramSection({ pacing: true }) });
    expect(restarted.failures).toEqual([]);
    // The old poller acknowledged only the update it was handling; the successor fetches two and three again.
    await waitFor(() => seen.length === 2, "the successor's first update");
    expect(seen).toEqual([`${OWNER.id}:${ids[0]}`, `${OWNER.id}:${ids[1]}`]);
    open();
    // Each message once in the inbox with its outcome (no LLM: `failed`, with the notice saying how to set one up);
    // the session may collect two into one turn, so one reply may cover two messages — none is sent twice.
    const inbox = () =>
      testApp.app.store.db
        .prepare("SELECT message_id AS messageId, outcome FROM inbox WHERE channel = 'telegram' ORDER BY id")
        .all() as Array<{ messageId: string; outcome: string | null }>;
    await waitFor(() => inbox().length === 3 && inbox().every((row) => row.outcome !== null), "the outcomes");
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(inbox()).toEqual(ids.map((id) => ({ messageId: `${OWNER.id}:${id}`, outcome: "failed" })));
    const replies = testApp.app.store.db
      .prepare("SELECT COUNT(*) FROM outbox WHERE channel = 'telegram' AND origin = 'reply'")
      .pluck()
      .get() as number;
    expect(replies).toBeGreaterThanOrEqual(1);
    expect(telegramReplies(telegram)).toHaveLength(replies);
    // Some update reached the router twice (old poller and successor): the inbox kept one.
    expect(seen.length).toBeGreaterThan(3);
  });
});
