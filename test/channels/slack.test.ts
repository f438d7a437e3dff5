import { afterEach, describe, expect, it } from "vitest";
import { SlackChannel } from "../../channels/slack.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeSlack, SLACK_BOT_USER, SLACK_TEAM, slackSignature } from "../fakes/slack.js";
import { runAdapterContract, type SentRecord } from "./adapter-contract.js";
import { channelDeps, RecordingSink, RouteServer } from "./helpers.js";

const ALICE = "U0ALICE";
const DM = "D0DM";
const GROUP = "C0GROUP";
const SECRET = "signing-secret-for-tests";

function socketAdapter(fake: FakeSlack, botToken = fake.botToken) {
  return new SlackChannel(
    channelDeps({ slack: { botToken, appToken: fake.appToken, apiUrl: fake.apiUrl, pacing: false } }),
    { clientPingTimeoutMs: 1000 },
  );
}

function buttonValues(body: Record<string, unknown>): string[] {
  const blocks =
    (body.blocks as Array<{ type: string; elements?: Array<{ value: string }> }> | undefined) ?? [];
  return blocks
    .filter((block) => block.type === "actions")
    .flatMap((block) => block.elements!.map((element) => element.value));
}

function messageEvent(fake: FakeSlack, fields: Record<string, unknown>) {
  return fake.eventCallback({ type: "message", user: ALICE, ts: fake.nextTs(), event_ts: "0", ...fields });
}

runAdapterContract("slack", async () => {
  const fake = await new FakeSlack().start();
  return {
    adapter: () => socketAdapter(fake),
    adapterWithWrongToken: () => socketAdapter(fake, "xoxb-wrong"),
    tokenEnvVar: "SLACK_BOT_TOKEN",
    maxMessageLength: 40_000,
    renderedBold: "*answer*",
    skips: {
      formatting:
        "Slack never rejects mrkdwn text; the invalid_blocks fallback is tested with buttons in the Slack specifics",
      typing:
        "Slack has no typing indicator for bots outside assistant threads (capabilities.typing is false)",
    },
    directChatId: DM,
    groupChatId: GROUP,
    sendDirect: async (text) => {
      fake.sendEnvelope("events_api", messageEvent(fake, { channel: DM, channel_type: "im", text }));
    },
    sendGroup: async (text, { mention, fromBot }) => {
      const body = mention ? `<@${SLACK_BOT_USER}> ${text}` : text;
      const sender = fromBot ? { bot_id: "B0OTHER", subtype: "bot_message", user: undefined } : {};
      fake.sendEnvelope(
        "events_api",
        messageEvent(fake, { channel: GROUP, channel_type: "channel", text: body, ...sender }),
      );
    },
    sent: (): SentRecord[] =>
      fake.callsOf("chat.postMessage").map((call) => ({
        chatId: String(call.body.channel),
        text: String(call.body.text),
        replyTo: call.body.thread_ts as string | undefined,
        formatted: call.body.mrkdwn !== "false" && call.body.mrkdwn !== false,
        buttons: buttonValues(call.body),
      })),
    failNextSend: () => fake.failNext("chat.postMessage", 429, "ratelimited", 1),
    failNextEdit: () => fake.failNext("chat.update", 200, "message_not_found"),
    pressButton: async (buttonId) => {
      const last = fake.callsOf("chat.postMessage").at(-1)!;
      fake.sendEnvelope("interactive", {
        type: "block_actions",
        team: { id: SLACK_TEAM },
        user: { id: ALICE, name: "alice", username: "alice", team_id: SLACK_TEAM },
        api_app_id: "A0APP",
        token: "legacy",
        trigger_id: "trigger",
        container: { type: "message", message_ts: "1.0", channel_id: last.body.channel },
        channel: { id: last.body.channel, name: "directmessage" },
        message: { ts: "1700000000.000001", type: "message", text: "x" },
        actions: [
          {
            type: "button",
            action_id: "magpie-0-1",
            block_id: "magpie-row-0",
            value: buttonId,
            action_ts: "1",
          },
        ],
      });
    },
    typingCount: () => 0,
    edits: () =>
      fake
        .callsOf("chat.update")
        .map((call) => ({ messageId: String(call.body.ts), text: String(call.body.text) })),
    dropConnections: async (dropping) => fake.setDropping(dropping),
    close: () => fake.close(),
  };
});

describe("slack specifics", () => {
  let cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const task of cleanup.reverse()) await task();
    cleanup = [];
  });

  async function startedSocket() {
    const fake = await new FakeSlack().start();
    const adapter = socketAdapter(fake);
    const sink = new RecordingSink();
    cleanup.push(
      () => fake.close(),
      () => adapter.stop(),
    );
    await adapter.start(sink);
    return { fake, adapter, sink };
  }

  it("acknowledges a Socket Mode envelope only after the inbox write", async () => {
    const { fake, sink } = await startedSocket();
    let release!: () => void;
    sink.beforeAccept = () => new Promise<void>((resolve) => (release = resolve));
    const envelope = fake.sendEnvelope(
      "events_api",
      messageEvent(fake, { channel: DM, channel_type: "im", text: "durable" }),
    );
    await waitFor(() => release, "listener running");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(fake.acks).not.toContain(envelope);
    release();
    await waitFor(() => fake.acks.includes(envelope), "ack after the write");
    expect(sink.messages.map((message) => message.text)).toEqual(["durable"]);
  });

  it("answers a channel mention once although Slack sends message and app_mention", async () => {
    const { fake, sink } = await startedSocket();
    const ts = fake.nextTs();
    const text = `<@${SLACK_BOT_USER}> status?`;
    fake.sendEnvelope(
      "events_api",
      fake.eventCallback({ type: "message", channel: GROUP, channel_type: "channel", user: ALICE, text, ts }),
    );
    fake.sendEnvelope(
      "events_api",
      fake.eventCallback({ type: "app_mention", channel: GROUP, user: ALICE, text, ts }),
    );
    await waitFor(() => fake.acks.length >= 2, "both envelopes acknowledged");
    expect(sink.messages).toHaveLength(1);
    expect(sink.messages[0]).toMatchObject({
      text: "@magpie status?",
      mentionsBot: true,
      messageId: `${GROUP}:${ts}`,
    });
  });

  it("falls back to plain text with the choices listed when Slack rejects the blocks", async () => {
    const { fake, adapter } = await startedSocket();
    fake.failNext("chat.postMessage", 200, "invalid_blocks");
    await adapter.send(
      { channel: "slack", chatId: DM },
      { text: "Run *this*?", buttons: [[{ id: "a:1", label: "Approve" }]] },
    );
    const [sent] = fake.callsOf("chat.postMessage");
    expect(sent?.body.blocks).toBeUndefined();
    expect(sent?.body.mrkdwn).toBe("false");
    expect(sent?.body.text).toBe("Run *this*?\n\n• Approve");
  });

  it("renders mrkdwn with escaping and threads thread replies", async () => {
    const { fake, adapter, sink } = await startedSocket();
    const parent = fake.nextTs();
    fake.sendEnvelope(
      "events_api",
      messageEvent(fake, {
        channel: GROUP,
        channel_type: "channel",
        text: "in thread",
        thread_ts: parent,
        parent_user_id: SLACK_BOT_USER,
      }),
    );
    const inbound = await waitFor(() => sink.messages[0], "thread message");
    expect(inbound).toMatchObject({
      threadId: parent,
      mentionsBot: true,
      replyTo: { fromBot: true },
      userName: "Alice",
      userId: ALICE,
    });
    await adapter.send(
      { channel: "slack", chatId: GROUP, threadId: inbound.threadId },
      { text: "**a** < b & [docs](https://x.test/a)" },
    );
    const [sent] = fake.callsOf("chat.postMessage");
    expect(sent?.body).toMatchObject({ thread_ts: parent, text: "*a* &lt; b &amp; <https://x.test/a|docs>" });
  });

  it("never lets model text ping a channel, formatted or plain", async () => {
    const { fake, adapter } = await startedSocket();
    await adapter.send({ channel: "slack", chatId: GROUP }, { text: "<!channel> **now**" });
    await adapter.send({ channel: "slack", chatId: GROUP }, { text: "<!here> <@U123>", format: "plain" });
    const texts = fake.callsOf("chat.postMessage").map((call) => call.body.text);
    expect(texts).toEqual(["&lt;!channel&gt; *now*", "&lt;!here&gt; &lt;@U123&gt;"]);
  });

  it("refuses a wrong app token with an error naming SLACK_APP_TOKEN", async () => {
    const fake = await new FakeSlack().start();
    cleanup.push(() => fake.close());
    const adapter = new SlackChannel(
      channelDeps({ slack: { botToken: fake.botToken, appToken: "xapp-wrong", apiUrl: fake.apiUrl } }),
    );
    const error = await adapter.start(new RecordingSink()).catch((caught: unknown) => caught);
    expect((error as Error).message).toMatch(/invalid_auth.*SLACK_APP_TOKEN/);
    expect(adapter.status().state).toBe("failed");
  });

  describe("signed HTTP events", () => {
    async function startedHttp() {
      const fake = await new FakeSlack().start();
      const routes = new RouteServer();
      const adapter = new SlackChannel(
        channelDeps(
          { slack: { botToken: fake.botToken, signingSecret: SECRET, apiUrl: fake.apiUrl } },
          routes,
        ),
      );
      const sink = new RecordingSink();
      await adapter.start(sink);
      const base = await routes.start();
      cleanup.push(
        () => fake.close(),
        () => routes.close(),
        () => adapter.stop(),
      );
      return { fake, adapter, sink, url: `${base}/slack/events` };
    }

    it("answers url_verification", async () => {
      const { url } = await startedHttp();
      const body = JSON.stringify({ type: "url_verification", challenge: "abc123", token: "legacy" });
      const response = await fetch(url, { method: "POST", body, headers: slackSignature(SECRET, body) });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ challenge: "abc123" });
    });

    it("accepts a correctly signed event and answers only after the inbox write", async () => {
      const { fake, sink, url, adapter } = await startedHttp();
      expect(adapter.status().state).toBe("connected");
      let written = false;
      sink.beforeAccept = async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        written = true;
      };
      const body = JSON.stringify(
        messageEvent(fake, { channel: DM, channel_type: "im", text: "signed hello" }),
      );
      const response = await fetch(url, { method: "POST", body, headers: slackSignature(SECRET, body) });
      expect(response.status).toBe(200);
      expect(written).toBe(true);
      expect(sink.messages.map((message) => message.text)).toEqual(["signed hello"]);
    });

    it("rejects a bad signature with 401 and delivers nothing", async () => {
      const { fake, sink, url } = await startedHttp();
      const body = JSON.stringify(messageEvent(fake, { channel: DM, channel_type: "im", text: "forged" }));
      const response = await fetch(url, {
        method: "POST",
        body,
        headers: slackSignature("not-the-secret", body),
      });
      expect(response.status).toBe(401);
      expect(sink.messages).toHaveLength(0);
    });

    it("rejects a stale timestamp with 401 even when the signature matches", async () => {
      const { fake, sink, url } = await startedHttp();
      const body = JSON.stringify(messageEvent(fake, { channel: DM, channel_type: "im", text: "replayed" }));
      const tenMinutesAgo = Math.floor(Date.now() / 1000) - 600;
      const response = await fetch(url, {
        method: "POST",
        body,
        headers: slackSignature(SECRET, body, tenMinutesAgo),
      });
      expect(response.status).toBe(401);
      expect(sink.messages).toHaveLength(0);
    });

    it("rejects a correctly signed request stamped 6 minutes in the future with 401", async () => {
      const { fake, sink, url } = await startedHttp();
      const body = JSON.stringify(
        messageEvent(fake, { channel: DM, channel_type: "im", text: "pre-signed" }),
      );
      const sixMinutesAhead = Math.floor(Date.now() / 1000) + 360;
      for (const timestamp of [sixMinutesAhead, Math.floor(Date.now() / 1000) + 10 * 365 * 86400]) {
        const response = await fetch(url, {
          method: "POST",
          body,
          headers: slackSignature(SECRET, body, timestamp),
        });
        expect(response.status).toBe(401);
      }
      const missing = await fetch(url, {
        method: "POST",
        body,
        headers: { ...slackSignature(SECRET, body), "x-slack-request-timestamp": "" },
      });
      expect(missing.status).toBe(401);
      expect(sink.messages).toHaveLength(0);
      // Within the window (a little clock skew ahead) the same request is accepted.
      const response = await fetch(url, {
        method: "POST",
        body,
        headers: slackSignature(SECRET, body, Math.floor(Date.now() / 1000) + 60),
      });
      expect(response.status).toBe(200);
      expect(sink.messages.map((message) => message.text)).toEqual(["pre-signed"]);
    });

    it("requires a signing secret without an app token", () => {
      expect(() => new SlackChannel(channelDeps({ slack: { botToken: "xoxb-1" } }))).toThrow(
        /SLACK_SIGNING_SECRET/,
      );
    });
  });
});
