import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { features } from "../../src/app/features.js";
import { ALICE, BOT, DMARC_PASS, deliver, rawMail } from "../channels/email-mail.js";
import { DISCORD_DM_CHANNEL_ID, DISCORD_USER, FakeDiscord } from "../fakes/discord.js";
import { type Dovecot, hasDovecot, type ImapTap, imapTap, startDovecot } from "../fakes/dovecot.js";
import { waitFor } from "../fakes/http-util.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { reply } from "../fakes/openai.js";
import { FakeSlack } from "../fakes/slack.js";
import { SmtpReceiver } from "../fakes/smtp-receiver.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/** Short limits so a test sees a whole incident in seconds; the catalog's own are 30 s (Slack) to 400 s. */
const SILENT_AFTER_SECS = 1.5;
/** The fakes' own receive cycles (Discord's heartbeat interval, Slack's pings) fitted to that limit. */
const CYCLE_MS = 300;

interface Readiness {
  ready: boolean;
  down: string[];
  channels: Record<string, { state: string; detail?: string; lastReceiveAt?: number }>;
}

/** The app's /readyz and the owner's ntfy topic, and one whole incident of `channel` against them. */
function incidents(app: () => TestApp, ntfy: () => NtfyFake) {
  const readiness = async (): Promise<{ status: number; body: Readiness }> => {
    const response = await fetch(`${app().url}/readyz`);
    return { status: response.status, body: (await response.json()) as Readiness };
  };
  const titled = (title: string) => ntfy().messages.filter((message) => message.title === title);
  return {
    readiness,
    titled,
    /**
     * Stalls `channel`, expects it named by /readyz, reconnected (`reconnects()` grows by two: the first attempt
     * and one more while the stall lasts) and the owner told once; then resumes it and expects it ready, and the
     * owner told once that it is back.
     */
    async stallAndRecover(options: {
      channel: string;
      label: string;
      others: string[];
      stall: () => void;
      resume: () => void;
      reconnects: () => number;
    }): Promise<void> {
      const { channel, label } = options;
      const before = options.reconnects();
      options.stall();
      const down = await waitFor(
        async () => {
          const answer = await readiness();
          return answer.status === 503 && answer.body.down.includes(channel) && answer.body;
        },
        `/readyz naming ${channel}`,
        10_000,
      );
      expect(down.down).toEqual([channel]);
      expect(down.channels[channel]?.state).toBe("reconnecting");
      await waitFor(() => titled(`Magpie: ${label} is down`).length === 1, "the owner told via ntfy", 10_000);
      await waitFor(() => options.reconnects() >= before + 2, "reconnected, twice over the stall", 10_000);
      const named = (await readiness()).body;
      expect(named.down).toEqual([channel]);
      for (const other of options.others) expect(named.channels[other]?.state).toBe("connected");
      expect(titled(`Magpie: ${label} is down`)).toHaveLength(1);
      expect(titled(`Magpie: ${label} is down`)[0]?.message).toMatch(
        new RegExp(
          `not receiving from ${label}: it completed no receive cycle for \\d+ s \\(its limit is 1\\.5 s\\)`,
        ),
      );

      options.resume();
      await waitFor(async () => (await readiness()).status === 200, "ready again", 20_000);
      await waitFor(() => titled(`Magpie: ${label} is back`).length === 1, "the back note", 5_000);
    },
  };
}

/**
 * Inbound liveness with the real discord.js and @slack/bolt (Socket Mode) clients: a fake that keeps the socket
 * open but stops answering — gateway heartbeats unacknowledged, socket pings unanswered, new connections not
 * greeted (a stall, not a close) — is detected within the channel's limit, reconnected, named by /readyz, and
 * reported to the owner once through ntfy, with one note when it is back; a message sent after recovery is
 * answered.
 */
describe("inbound liveness: Discord and Slack gateways that stall", () => {
  let discord: FakeDiscord;
  let slack: FakeSlack;
  let ntfy: NtfyFake;
  let testApp: TestApp;
  const check = incidents(
    () => testApp,
    () => ntfy,
  );

  beforeAll(async () => {
    [discord, slack, ntfy] = await Promise.all([
      new FakeDiscord().start(),
      new FakeSlack().start(),
      startNtfyFake(),
    ]);
    discord.heartbeatIntervalMs = CYCLE_MS;
    slack.pingEveryMs = CYCLE_MS;
    testApp = await startTestApp({
      features,
      loadChannels: true,
      channel: null,
      config: {
        channels: {
          discord: {
            token: discord.validToken,
            apiBase: discord.apiBase,
            pacing: false,
            allowFrom: [DISCORD_USER.id],
            silentAfterSecs: SILENT_AFTER_SECS,
          },
          slack: {
            botToken: slack.botToken,
            appToken: slack.appToken,
            apiUrl: slack.apiUrl,
            pacing: false,
            allowFrom: ["U0ALICE"],
            silentAfterSecs: SILENT_AFTER_SECS,
          },
        },
        notify: { ntfy: { url: ntfy.url, topic: "magpie-owner" } },
      },
    });
    await waitFor(async () => (await check.readiness()).status === 200, "ready", 10_000);
  }, 30_000);

  afterAll(async () => {
    await testApp?.stop();
    await Promise.all([discord?.close(), slack?.close(), ntfy?.close()]);
  });

  it("Discord: heartbeats go unacknowledged → silent past its limit, reconnected, named by /readyz, the owner told once; answers after recovery", async () => {
    await check.stallAndRecover({
      channel: "discord",
      label: "Discord",
      others: ["slack"],
      stall: () => discord.stallReceives(),
      resume: () => discord.resumeReceives(),
      reconnects: () => discord.connections,
    });
    testApp.llm!.script(reply.text("Discord answer after the stall."));
    discord.sendMessage({ content: "still there?" });
    await waitFor(
      () =>
        discord
          .callsOf("POST", new RegExp(`^/channels/${DISCORD_DM_CHANNEL_ID}/messages$`))
          .some((call) => String(call.body.content).includes("Discord answer after the stall.")),
      "the answer on Discord",
      10_000,
    );
    expect(check.titled("Magpie: Discord is down")).toHaveLength(1);
    expect(check.titled("Magpie: Discord is back")).toHaveLength(1);
  }, 60_000);

  it("Slack: socket pings go unanswered → silent past its limit, reconnected, named by /readyz, the owner told once; answers after recovery", async () => {
    await check.stallAndRecover({
      channel: "slack",
      label: "Slack",
      others: ["discord"],
      stall: () => slack.stallReceives(),
      resume: () => slack.resumeReceives(),
      reconnects: () => slack.callsOf("apps.connections.open").length,
    });
    testApp.llm!.script(reply.text("Slack answer after the stall."));
    slack.sendEnvelope(
      "events_api",
      slack.eventCallback({
        type: "message",
        channel: "D0DM",
        channel_type: "im",
        user: "U0ALICE",
        text: "still there?",
        ts: slack.nextTs(),
      }),
    );
    await waitFor(
      () =>
        slack
          .callsOf("chat.postMessage")
          .some((call) => String(call.body.text).includes("Slack answer after the stall.")),
      "the answer on Slack",
      10_000,
    );
    expect(check.titled("Magpie: Slack is down")).toHaveLength(1);
    expect(check.titled("Magpie: Slack is back")).toHaveLength(1);
  }, 60_000);
});

const PASSWORD = "imap-secret";

/**
 * Inbound liveness with the real imapflow against a real Dovecot, through a relay that goes quiet: the IDLE
 * connection stays open but nothing comes back (a NOOP goes unanswered, a new connection gets no greeting) — the
 * channel is silent past its limit, reconnected, named by /readyz, the owner told once; after the line recovers,
 * a mail is answered.
 */
describe.runIf(hasDovecot())("inbound liveness: an IMAP connection that goes quiet", () => {
  let dovecot: Dovecot;
  let tap: ImapTap;
  let smtp: SmtpReceiver;
  let ntfy: NtfyFake;
  let testApp: TestApp;
  const check = incidents(
    () => testApp,
    () => ntfy,
  );

  beforeAll(async () => {
    dovecot = await startDovecot({ bot: PASSWORD });
    [tap, smtp, ntfy] = await Promise.all([
      imapTap(dovecot),
      new SmtpReceiver(BOT, "smtp-secret").start(),
      startNtfyFake(),
    ]);
    testApp = await startTestApp({
      features,
      loadChannels: true,
      channel: null,
      config: {
        channels: {
          email: {
            address: BOT,
            imap: { host: "127.0.0.1", port: tap.port, secure: false, user: "bot", password: PASSWORD },
            smtp: { host: "127.0.0.1", port: smtp.port, secure: false, user: BOT, password: "smtp-secret" },
            authservId: "mx.example.org",
            dmPolicy: "allowlist",
            allowFrom: [ALICE],
            pacing: false,
            silentAfterSecs: SILENT_AFTER_SECS,
          },
        },
        notify: { ntfy: { url: ntfy.url, topic: "magpie-owner" } },
      },
    });
    await waitFor(async () => (await check.readiness()).status === 200, "ready", 10_000);
  }, 30_000);

  afterAll(async () => {
    await testApp?.stop();
    await Promise.all([tap?.close(), smtp?.close(), ntfy?.close()]);
    await dovecot?.stop();
  });

  it("E-mail: IMAP goes quiet → silent past its limit, reconnected, named by /readyz, the owner told once; answers after recovery", async () => {
    await check.stallAndRecover({
      channel: "email",
      label: "E-mail",
      others: [],
      stall: () => tap.stall(),
      resume: () => tap.resume(),
      reconnects: () => tap.connections,
    });
    testApp.llm!.script(reply.text("Mail answer after the stall."));
    await deliver(
      dovecot,
      rawMail({ subject: "Back?", body: "still there?", headers: [DMARC_PASS] }),
      "bot",
      PASSWORD,
    );
    const answer = await waitFor(() => smtp.mails[0], "the answer by mail", 20_000);
    expect(answer.parsed.text).toContain("Mail answer after the stall.");
    expect(check.titled("Magpie: E-mail is down")).toHaveLength(1);
    expect(check.titled("Magpie: E-mail is back")).toHaveLength(1);
  }, 60_000);
});
