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
  await deliverAll(dovecot, [raw], user, password);
}

/** Delivers mails into the bot's INBOX in this order, over one IMAP connection. */
export async function deliverAll(
  dovecot: Dovecot,
  raws: string[],
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
    for (const raw of raws) await client.append("INBOX", raw);
  } finally {
    await client.logout();
  }
}

/** Headers of a mail from `from` (Alice by default) with the given subject and extra header lines. */
function headLines(fields: { from?: string; name?: string; subject?: string; headers?: string[] }): string[] {
  const name = (fields.name ?? "Alice").replace(/["\\]/g, (char) => `\\${char}`);
  return [
    ...(fields.headers ?? []),
    `From: "${name}" <${fields.from ?? ALICE}>`,
    `To: ${BOT}`,
    `Subject: ${fields.subject ?? "hello"}`,
    `Message-ID: <${Math.random().toString(36).slice(2)}@example.com>`,
    "Date: Wed, 25 Nov 2026 10:00:00 +0000",
    "MIME-Version: 1.0",
  ];
}

/** An HTML-only mail: a table of `rows` rows, one per line (300,000 rows: about 5.7 MB). */
export function htmlTableMail(fields: {
  from?: string;
  subject?: string;
  headers?: string[];
  rows: number;
}): string {
  const rows: string[] = [];
  for (let row = 0; row < fields.rows; row++) rows.push(`<tr><td>${row % 1000}</td></tr>`);
  return [
    ...headLines(fields),
    "Content-Type: text/html; charset=utf-8",
    "",
    `<html><body><p>START of the table</p><table>`,
    ...rows,
    "</table><p>END of the table</p></body></html>",
    "",
  ].join("\r\n");
}

/** A multipart mail with a short text part and `count` tiny attachments. */
export function manyAttachmentsMail(fields: {
  from?: string;
  subject?: string;
  headers?: string[];
  count: number;
}): string {
  const parts = [
    ...headLines(fields),
    'Content-Type: multipart/mixed; boundary="b1"',
    "",
    "--b1",
    "Content-Type: text/plain; charset=utf-8",
    "",
    "see the files",
  ];
  for (let index = 0; index < fields.count; index++) {
    parts.push(
      "--b1",
      `Content-Type: text/plain; name="f${index}.txt"`,
      `Content-Disposition: attachment; filename="f${index}.txt"`,
      "",
      "x",
    );
  }
  parts.push("--b1--", "");
  return parts.join("\r\n");
}

/**
 * A plain mail with outside text in the subject, the From display name, one more header and the body, as asked.
 * Header values are folded (CRLF + space) wherever the text has a line break, so it stays one header.
 */
export function hostileMail(fields: {
  subject?: string;
  name?: string;
  header?: string;
  body?: string;
  headers?: string[];
}): string {
  const fold = (text: string) => text.replace(/\r?\n/g, "\r\n ");
  return [
    ...headLines({
      name: fold(fields.name ?? "Alice"),
      subject: fold(fields.subject ?? "hello"),
      headers: [...(fields.headers ?? []), ...(fields.header ? [`X-Hostile: ${fold(fields.header)}`] : [])],
    }),
    "Content-Type: text/plain; charset=utf-8",
    "",
    fields.body ?? "hi",
    "",
  ].join("\r\n");
}
