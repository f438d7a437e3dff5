import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { type Dovecot, hasDovecot, type ImapTap, imapTap, startDovecot } from "../fakes/dovecot.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { SmtpReceiver } from "../fakes/smtp-receiver.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { LINEAR_BOUND_MS } from "../helpers/hostile-inputs.js";
import {
  ALICE,
  BOT,
  DMARC_PASS,
  deliver,
  htmlTableMail,
  manyAttachmentsMail,
  rawMail,
} from "./email-mail.js";

const STRANGER = "mallory@evil.test";
const STRANGER_PASS = "Authentication-Results: mx.example.org; dmarc=pass header.from=evil.test";
/**
 * The stall the loop may show while a mail is handled (this process runs the test too): far below the 24 s that
 * parsing on the loop took. Measured: ~150 ms for the stranger's table, 500–850 ms for the owner's (mailparser
 * decodes the 5.7 MB part in one piece).
 */
const MAX_LOOP_DELAY_MS = LINEAR_BOUND_MS;

/**
 * DESIGN.md → Security: "a stranger's input is judged by its envelope (sender, headers) before its body is
 * parsed", and "Outside text … reaches no regex or parser that can stall the event loop". The whole app (real
 * access control, inbox, router, outbox) against a real Dovecot and an SMTP receiver, with /healthz watched.
 */
describe.runIf(hasDovecot())("e-mail: hostile mail against the whole app", () => {
  let dovecot: Dovecot;
  let tap: ImapTap;
  let smtp: SmtpReceiver;
  let testApp: TestApp;
  let loop: IntervalHistogram;

  beforeAll(async () => {
    dovecot = await startDovecot({ bot: "imap-secret" });
    tap = await imapTap(dovecot);
    smtp = await new SmtpReceiver(BOT, "smtp-secret").start();
    testApp = await startTestApp({
      features: [accessFeature],
      loadChannels: true,
      channel: null,
      config: {
        http: { maxEventLoopBlockMs: MAX_LOOP_DELAY_MS },
        // The cut table alone is ~25,000 tokens: history stays uncompacted, no summary calls to script.
        agent: { historyTokens: 400_000 },
        channels: {
          email: {
            address: BOT,
            imap: { host: "127.0.0.1", port: tap.port, secure: false, user: "bot", password: "imap-secret" },
            smtp: { host: "127.0.0.1", port: smtp.port, secure: false, user: BOT, password: "smtp-secret" },
            authservId: "mx.example.org",
            dmPolicy: "allowlist",
            allowFrom: [ALICE],
            pacing: false,
          },
        },
      },
    });
    // The first scan sets the mailbox cursor: mail from then on is new.
    await waitFor(() => testApp.app.store.kv.has("channel.email.cursor:bot:INBOX"), "the cursor", 20_000);
  }, 60_000);

  afterAll(async () => {
    await testApp?.stop();
    await tap?.close();
    await smtp?.close();
    await dovecot?.stop();
  });

  const healthz = async () => (await fetch(`${testApp.url}/healthz`)).status;
  const repliesTo = (address: string) => smtp.mails.filter((mail) => mail.to.includes(address));
  /** Runs `act`, then returns the longest event-loop stall seen meanwhile (ms). */
  async function loopDelayDuring(act: () => Promise<void>): Promise<number> {
    loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    try {
      await act();
    } finally {
      loop.disable();
    }
    return loop.max / 1e6;
  }

  it("a stranger's 5.7 MB HTML table is never fetched: the loop keeps time, the owner's next mail is answered", async () => {
    const raw = htmlTableMail({
      from: STRANGER,
      subject: "big table",
      headers: [STRANGER_PASS],
      rows: 300_000,
    });
    expect(raw.length).toBeGreaterThan(5.5 * 1024 * 1024);
    testApp.llm!.script(reply.text("owner answered"));
    const bytesBefore = tap.bytesToClient;
    const delay = await loopDelayDuring(async () => {
      await deliver(dovecot, raw);
      await deliver(dovecot, rawMail({ subject: "after", body: "still there?", headers: [DMARC_PASS] }));
      await waitFor(() => repliesTo(ALICE).length > 0, "the owner's reply", 30_000);
      expect(await healthz()).toBe(200);
    });
    console.log(`e-mail: stranger's 5.7 MB HTML table → loop delay ${Math.round(delay)} ms`);
    expect(delay).toBeLessThan(MAX_LOOP_DELAY_MS);
    expect(repliesTo(ALICE)[0]?.parsed.text).toContain("owner answered");
    expect(repliesTo(STRANGER)).toEqual([]);
    // The stranger's body never crossed the IMAP connection: envelopes and the owner's small mail did.
    const fetched = tap.bytesToClient - bytesBefore;
    console.log(`e-mail: ${fetched} bytes fetched over IMAP for the stranger's 5.7 MB mail and the owner's`);
    expect(fetched).toBeLessThan(100_000);
    // Only the owner's mail reached the model.
    expect(testApp.llm!.requests).toHaveLength(1);
    expect(JSON.stringify(testApp.llm!.requests[0])).not.toContain("START of the table");
    testApp.llm!.assertDone();
  }, 60_000);

  it("an owner's 5.7 MB HTML table is read without stalling: the model gets the start, the rest is a workspace file", async () => {
    testApp.llm!.script(reply.text("table read"));
    const before = repliesTo(ALICE).length;
    const requestsBefore = testApp.llm!.requests.length;
    const delay = await loopDelayDuring(async () => {
      await deliver(dovecot, htmlTableMail({ subject: "my table", headers: [DMARC_PASS], rows: 300_000 }));
      await waitFor(() => repliesTo(ALICE).length > before, "the reply to the table", 60_000);
      expect(await healthz()).toBe(200);
    });
    console.log(`e-mail: owner's 5.7 MB HTML table → loop delay ${Math.round(delay)} ms`);
    expect(delay).toBeLessThan(MAX_LOOP_DELAY_MS);
    const asked = JSON.stringify(testApp.llm!.requests[requestsBefore]);
    expect(asked).toContain("START of the table");
    expect(asked).toContain("agent.maxInboundChars");
    const inbound = path.join(testApp.config.workspace, "inbound");
    const rest = readdirSync(inbound).map((file) => readFileSync(path.join(inbound, file), "utf8"));
    expect(rest.some((text) => text.includes("999"))).toBe(true);
    testApp.llm!.assertDone();
  }, 90_000);

  it("1,001 attachments make the parser give up: that mail is answered from its headers and the next one too", async () => {
    testApp.llm!.script(reply.text("could not read it"), reply.text("next one answered"));
    const before = repliesTo(ALICE).length;
    const requestsBefore = testApp.llm!.requests.length;
    await deliver(dovecot, manyAttachmentsMail({ subject: "files", headers: [DMARC_PASS], count: 1_001 }));
    await deliver(dovecot, rawMail({ subject: "next", body: "and this one?", headers: [DMARC_PASS] }));
    await waitFor(() => repliesTo(ALICE).length >= before + 2, "both replies", 30_000);
    const texts = repliesTo(ALICE)
      .slice(before)
      .map((mail) => mail.parsed.text?.trim());
    expect(texts).toEqual(["could not read it", "next one answered"]);
    const first = JSON.stringify(testApp.llm!.requests[requestsBefore]);
    expect(first).toContain("files");
    expect(first).toContain("could not be read");
    testApp.llm!.assertDone();
  }, 60_000);
});

describe.runIf(hasDovecot())("e-mail: a stranger under dmPolicy pairing", () => {
  let dovecot: Dovecot;
  let tap: ImapTap;
  let smtp: SmtpReceiver;
  let testApp: TestApp;

  beforeAll(async () => {
    dovecot = await startDovecot({ bot: "imap-secret" });
    tap = await imapTap(dovecot);
    smtp = await new SmtpReceiver(BOT, "smtp-secret").start();
    testApp = await startTestApp({
      features: [accessFeature],
      loadChannels: true,
      channel: null,
      config: {
        channels: {
          email: {
            address: BOT,
            imap: { host: "127.0.0.1", port: tap.port, secure: false, user: "bot", password: "imap-secret" },
            smtp: { host: "127.0.0.1", port: smtp.port, secure: false, user: BOT, password: "smtp-secret" },
            authservId: "mx.example.org",
            pacing: false,
          },
        },
      },
    });
    await waitFor(() => testApp.app.store.kv.has("channel.email.cursor:bot:INBOX"), "the cursor", 20_000);
  }, 60_000);

  afterAll(async () => {
    await testApp?.stop();
    await tap?.close();
    await smtp?.close();
    await dovecot?.stop();
  });

  it("gets a pairing code made from the headers alone: the 5.7 MB body is never fetched, no model is asked", async () => {
    const bytesBefore = tap.bytesToClient;
    await deliver(
      dovecot,
      htmlTableMail({ from: STRANGER, subject: "let me in", headers: [STRANGER_PASS], rows: 300_000 }),
    );
    const code = await waitFor(
      () => smtp.mails.find((mail) => mail.to.includes(STRANGER)),
      "the pairing reply",
      30_000,
    );
    expect(code.parsed.text).toMatch(/pairing code is [A-HJ-NP-Z2-9]{8}/);
    const fetched = tap.bytesToClient - bytesBefore;
    console.log(`e-mail: ${fetched} bytes fetched over IMAP for a stranger's 5.7 MB mail under pairing`);
    expect(fetched).toBeLessThan(100_000);
    expect(testApp.llm!.requests).toEqual([]);
  }, 60_000);
});
