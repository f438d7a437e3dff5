import { ImapFlow } from "imapflow";
import type { Dovecot } from "../fakes/dovecot.js";

export const BOT = "bot@example.org";
export const ALICE = "alice@example.com";
export const AUTHSERV = "mx.example.org";

/** A raw RFC 5322 mail (CRLF), with Authentication-Results and other headers as given. */
export function rawMail(fields: {
  from?: string;
  subject?: string;
  body?: string;
  messageId?: string;
  inReplyTo?: string;
  references?: string[];
  headers?: string[];
  attachment?: { name: string; mime: string; content: string };
}): string {
  const messageId = fields.messageId ?? `<${Math.random().toString(36).slice(2)}@example.com>`;
  const lines = [
    ...(fields.headers ?? []),
    `From: Alice <${fields.from ?? ALICE}>`,
    `To: ${BOT}`,
    `Subject: ${fields.subject ?? "hello"}`,
    `Message-ID: ${messageId}`,
    "Date: Wed, 25 Nov 2026 10:00:00 +0000",
    ...(fields.inReplyTo ? [`In-Reply-To: ${fields.inReplyTo}`] : []),
    ...(fields.references ? [`References: ${fields.references.join(" ")}`] : []),
    "MIME-Version: 1.0",
  ];
  const body = fields.body ?? "hi";
  if (!fields.attachment) {
    return [...lines, "Content-Type: text/plain; charset=utf-8", "", body, ""].join("\r\n");
  }
  return [
    ...lines,
    'Content-Type: multipart/mixed; boundary="b1"',
    "",
    "--b1",
    "Content-Type: text/plain; charset=utf-8",
    "",
    body,
    "--b1",
    `Content-Type: ${fields.attachment.mime}; name="${fields.attachment.name}"`,
    `Content-Disposition: attachment; filename="${fields.attachment.name}"`,
    "Content-Transfer-Encoding: base64",
    "",
    Buffer.from(fields.attachment.content).toString("base64"),
    "--b1--",
    "",
  ].join("\r\n");
}

/** What the receiving server writes for a mail from Alice that passed DMARC. */
export const DMARC_PASS = `Authentication-Results: ${AUTHSERV}; dmarc=pass header.from=example.com`;

/** Delivers a mail into the bot's INBOX over IMAP APPEND, as the MTA would. */
export async function deliver(
  dovecot: Dovecot,
  raw: string,
  user = "bot",
  password = "imap-secret",
): Promise<void> {
  const client = new ImapFlow({
    host: dovecot.host,
    port: dovecot.port,
    secure: false,
    auth: { user, pass: password },
    logger: false,
  });
  await client.connect();
  try {
    await client.append("INBOX", raw);
  } finally {
    await client.logout();
  }
}
