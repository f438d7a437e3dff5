import { describe, expect, it } from "vitest";
import { headerFields, readEnvelope, stripRe } from "../../channels/email-envelope.js";
import { LINEAR_BOUND_MS, timed } from "../helpers/hostile-inputs.js";

const raw = (lines: string[]) => Buffer.from(`${lines.join("\r\n")}\r\n\r\n`);

describe("e-mail envelope: the header fields read before the body", () => {
  it("decodes From, Subject and the ids, reads References, Authentication-Results and machine senders", async () => {
    const envelope = await readEnvelope(
      raw([
        "Authentication-Results: mx.example.org;",
        "  dmarc=pass header.from=example.com",
        "From: =?utf-8?q?Al=C3=AFce?= <Alice@Example.com>",
        "Subject: =?utf-8?b?UmU6IETDrnNr?=",
        "Message-ID: <q2@example.com>",
        "In-Reply-To: <q1@example.com>",
        "References: <root@example.com>",
        "  <q1@example.com>",
      ]),
    );
    expect(envelope).toEqual({
      from: "alice@example.com",
      fromName: "Alïce",
      subject: "Re: Dîsk",
      messageId: "<q2@example.com>",
      inReplyTo: "<q1@example.com>",
      references: ["<root@example.com>", "<q1@example.com>"],
      authenticationResults: ["mx.example.org; dmarc=pass header.from=example.com"],
      automatic: false,
    });
    expect((await readEnvelope(raw(["From: a@b.c", "Auto-Submitted: auto-replied"]))).automatic).toBe(true);
    expect((await readEnvelope(raw(["From: a@b.c", "Precedence: bulk"]))).automatic).toBe(true);
    expect((await readEnvelope(raw(["From: a@b.c, d@e.f"]))).from).toBe("");
  });

  it("keeps a long thread's root and its newest references", async () => {
    const ids = Array.from({ length: 500 }, (_, index) => `<r${index}@example.com>`);
    const { references } = await readEnvelope(raw(["From: a@b.c", `References: ${ids.join(" ")}`]));
    expect(references).toHaveLength(20);
    expect(references[0]).toBe("<r0@example.com>");
    expect(references.at(-1)).toBe("<r499@example.com>");
  });

  it("takes a From over 2,000 characters for no one's, and cuts a long subject and name", async () => {
    const name = "n".repeat(1_500);
    const envelope = await readEnvelope(
      raw([`From: "${name}" <a@b.c>`, `Subject: ${"s".repeat(1_000_000)}`, "Message-ID: <x@y>"]),
    );
    expect(envelope.from).toBe("a@b.c");
    expect(envelope.fromName).toHaveLength(201);
    expect(envelope.subject).toHaveLength(2_000);
    expect((await readEnvelope(raw([`From: "${"n".repeat(1_000_000)}" <a@b.c>`]))).from).toBe("");
  });

  it("reads a million folded lines and a run of 300,000 Re: in linear time", () => {
    const folded = `X-Long: a${"\r\n b".repeat(1_000_000)}\r\nFrom: a@b.c\r\n`;
    let fields: Array<[string, string]> = [];
    expect(timed(() => (fields = headerFields(folded, 16_385)))).toBeLessThan(LINEAR_BOUND_MS);
    expect(fields.map(([key]) => key)).toEqual(["x-long", "from"]);
    expect(fields[0]![1]).toHaveLength(16_385);
    const subject = `${"Re: ".repeat(300_000)}Disk`;
    let stripped = "";
    expect(timed(() => (stripped = stripRe(subject)))).toBeLessThan(LINEAR_BOUND_MS);
    expect(stripped).toBe("Disk");
  });
});
