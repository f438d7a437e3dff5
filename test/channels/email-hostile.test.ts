import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmailChannel } from "../../channels/email.js";
import type { InboundMessage } from "../../src/core/types.js";
import { type Dovecot, hasDovecot, startDovecot } from "../fakes/dovecot.js";
import { waitFor } from "../fakes/http-util.js";
import { hostileInputs, LINEAR_BOUND_MS } from "../helpers/hostile-inputs.js";
import { ALICE, AUTHSERV, BOT, DMARC_PASS, deliverAll, hostileMail } from "./email-mail.js";
import { channelDeps, RecordingSink } from "./helpers.js";

const MB = 1024 * 1024;

/**
 * Every 1 MB hostile input (test/helpers/hostile-inputs.ts) through the e-mail inbound path, from a real Dovecot:
 * once in the headers that decide and thread a mail (Subject, References, one more Authentication-Results), once
 * in the From display name and once as the body. Each mail is handled, none holds the loop.
 */
describe.runIf(hasDovecot())("e-mail: 1 MB hostile inputs in the headers and the body", () => {
  let dovecot: Dovecot;
  let adapter: EmailChannel;
  const sink = new RecordingSink();
  let loop: IntervalHistogram;

  beforeAll(async () => {
    dovecot = await startDovecot({ bot: "imap-secret" });
    const deps = channelDeps({
      email: {
        address: BOT,
        imap: { host: "127.0.0.1", port: dovecot.port, secure: false, user: "bot", password: "imap-secret" },
        // Nothing is sent in this test: the SMTP server is never reached.
        smtp: { host: "127.0.0.1", port: 9, secure: false, user: BOT, password: "unused" },
        authservId: AUTHSERV,
      },
    });
    adapter = new EmailChannel(deps);
    await adapter.start(sink);
    await waitFor(() => deps.store.kv.has("channel.email.cursor:bot:INBOX"), "the cursor", 20_000);
    loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
  }, 30_000);

  afterAll(async () => {
    loop?.disable();
    await adapter?.stop();
    await dovecot?.stop();
  });

  const inputs = Object.entries(hostileInputs(MB));
  // Line breaks become spaces in a header: folded into a million continuation lines, the input measures
  // Dovecot (16 s to serve such a header), not Magpie; headerFields reads folded lines in email-envelope tests.
  const oneLine = (text: string) => text.replace(/\r?\n/g, " ");
  let markers = 0;

  /**
   * Delivers the mails and a marker after them, and waits for the marker (mail is handled in order); returns the
   * mails handed on before it and the longest event-loop stall meanwhile.
   */
  async function handled(mails: string[]): Promise<{ received: InboundMessage[]; stallMs: number }> {
    const before = sink.messages.length;
    const marker = `marker ${++markers}`;
    await deliverAll(dovecot, [...mails, hostileMail({ subject: marker, headers: [DMARC_PASS] })]);
    loop.reset();
    await waitFor(() => sink.messages.at(-1)?.text === `${marker}\n\nhi`, "the marker", 90_000);
    return { received: sink.messages.slice(before, -1), stallMs: loop.max / 1e6 };
  }

  it("in Subject, References and Authentication-Results (mailparser then refuses the header: read from the fields)", async () => {
    const { received, stallMs } = await handled(
      inputs.map(([, input]) =>
        hostileMail({
          subject: oneLine(input),
          headers: [
            DMARC_PASS,
            `References: ${oneLine(input)}`,
            `Authentication-Results: ${AUTHSERV}; ${oneLine(input)}`,
          ],
        }),
      ),
    );
    console.log(
      `e-mail, 1 MB hostile headers: ${inputs.length} mails, longest stall ${Math.round(stallMs)} ms`,
    );
    expect(stallMs).toBeLessThan(LINEAR_BOUND_MS);
    expect(received).toHaveLength(inputs.length);
    for (const inbound of received) {
      expect(inbound.chatId).toBe(ALICE);
      // Two Authentication-Results from the authserv-id: the sender can't be believed.
      expect(inbound.userId).toBe(`unverified:${ALICE}`);
      expect(inbound.text.length).toBeLessThan(10_000);
    }
  }, 120_000);

  it("in From's display name: a From over 2,000 characters is no one's, the mail is left alone", async () => {
    const { received, stallMs } = await handled(
      inputs.map(([, input]) => hostileMail({ name: oneLine(input), headers: [DMARC_PASS] })),
    );
    console.log(
      `e-mail, 1 MB hostile From names: ${inputs.length} mails, longest stall ${Math.round(stallMs)} ms`,
    );
    expect(stallMs).toBeLessThan(LINEAR_BOUND_MS);
    expect(received).toEqual([]);
  }, 120_000);

  it("as the body", async () => {
    const { received, stallMs } = await handled(
      inputs.map(([, input]) => hostileMail({ subject: "hostile body", body: input, headers: [DMARC_PASS] })),
    );
    console.log(
      `e-mail, 1 MB hostile bodies: ${inputs.length} mails, longest stall ${Math.round(stallMs)} ms`,
    );
    expect(stallMs).toBeLessThan(LINEAR_BOUND_MS);
    expect(received.map((inbound) => inbound.userId)).toEqual(inputs.map(() => ALICE));
    for (const inbound of received) expect(inbound.text.startsWith("hostile body")).toBe(true);
  }, 120_000);
});
