import type { AddressObject } from "mailparser";
import { parseMail } from "./email-body.js";

/**
 * The header fields fetched before anything else: who sent the mail (From and the receiving server's
 * Authentication-Results), how it threads, whether a machine sent it. Raw fields rather than IMAP's ENVELOPE:
 * imapflow tokenizes an ENVELOPE on the event loop (400 ms for 1 MB subject and name on a small box), a raw
 * field comes as one literal.
 */
export const ENVELOPE_FIELDS = [
  "from",
  "subject",
  "message-id",
  "in-reply-to",
  "references",
  "authentication-results",
  "auto-submitted",
  "precedence",
];
/** References kept per thread: enough for every client to thread, bounded however long the thread grows. */
export const MAX_REFERENCES = 20;
/** From, Subject, Message-ID, In-Reply-To longer than this are no one's (RFC 5322 lines end at 998). */
const FIELD_LIMIT = 2_000;
/** References and Authentication-Results: a long thread, a verbose server; more than this is read no further. */
const LIST_LIMIT = 16 * 1024;
/** A display name longer than this is cut (it is shown in logs, traces and the dashboard). */
const NAME_LIMIT = 200;
/** RFC 5322's line limit: a longer message id is no message id (and would key the inbox and threads). */
const ID_LIMIT = 998;

/** What a mail's header fields say, read before its body is fetched. */
export interface MailEnvelope {
  /** Lower-cased bare address of the single From mailbox; "" when there is none, several, or From is too long. */
  from: string;
  fromName: string;
  subject: string;
  messageId?: string;
  inReplyTo?: string;
  /** The thread's root first, then the newest (at most MAX_REFERENCES). */
  references: string[];
  /** The Authentication-Results values in the order they appear (top = the last hop). */
  authenticationResults: string[];
  /** Sent by a machine (auto-replies, bounces, lists): never answered, so bots can't loop. */
  automatic: boolean;
}

/**
 * Reads ENVELOPE_FIELDS as fetched raw. Every value is cut to its limit before anything parses it; From,
 * Subject and the ids are then decoded by mailparser (encoded words, address syntax) from a few kilobytes.
 */
export async function readEnvelope(raw: Buffer | undefined): Promise<MailEnvelope> {
  const fields = headerFields(raw?.toString("utf8") ?? "", LIST_LIMIT + 1);
  const first = (name: string) => fields.find(([key]) => key === name)?.[1] ?? "";
  const all = (name: string) => fields.filter(([key]) => key === name).map(([, value]) => value);
  const fromField = first("from");
  const short = (value: string) => (value.length > FIELD_LIMIT ? "" : value);
  const block = [
    `From: ${short(fromField)}`,
    `Subject: ${first("subject").slice(0, FIELD_LIMIT)}`,
    `Message-ID: ${short(first("message-id"))}`,
    `In-Reply-To: ${short(first("in-reply-to"))}`,
    "",
    "",
  ].join("\r\n");
  const parsed = await parseMail(Buffer.from(block));
  const from = singleMailbox(parsed.from);
  const submitted = first("auto-submitted").slice(0, 100).trim().toLowerCase() || "no";
  const precedence = first("precedence").slice(0, 100).trim().toLowerCase();
  const messageId = idsOf(parsed.messageId ?? "")[0];
  const inReplyTo = idsOf(parsed.inReplyTo ?? "")[0];
  return {
    from: from.address,
    fromName: cut(from.name, NAME_LIMIT),
    subject: (parsed.subject ?? "").trim(),
    ...(messageId ? { messageId } : {}),
    ...(inReplyTo ? { inReplyTo } : {}),
    references: threadOf(listOf(all("references").join(" "))),
    authenticationResults: all("authentication-results"),
    automatic: submitted !== "no" || ["bulk", "junk", "list", "auto_reply"].includes(precedence),
  };
}

/**
 * Raw header lines as `[lower-case name, unfolded value]`, in order, each value cut after `limit` characters.
 * Hand-written (a dozen lines): mailparser gives up on a header section over 1 MB, and this must read whatever a
 * sender wrote, in one linear pass.
 */
export function headerFields(raw: string, limit: number): Array<[string, string]> {
  const fields: Array<{ name: string; parts: string[]; length: number }> = [];
  let at = 0;
  while (at < raw.length) {
    let end = raw.indexOf("\n", at);
    if (end === -1) end = raw.length;
    const line = raw.slice(at, raw[end - 1] === "\r" ? end - 1 : end);
    at = end + 1;
    if (!line) continue;
    const last = fields.at(-1);
    if ((line.startsWith(" ") || line.startsWith("\t")) && last) {
      // Parts are kept and joined once: growing one string per folded line would copy it every time.
      if (last.length < limit) {
        const part = line.trim();
        last.parts.push(part);
        last.length += part.length + 1;
      }
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const value = line.slice(colon + 1, colon + 1 + limit).trim();
    fields.push({ name: line.slice(0, colon).trim().toLowerCase(), parts: [value], length: value.length });
  }
  return fields.map(({ name, parts }) => [name, parts.join(" ").slice(0, limit)]);
}

/** The bare address and name of a From with exactly one mailbox. */
function singleMailbox(from: AddressObject | undefined): { address: string; name: string } {
  const mailboxes = from?.value ?? [];
  const [only] = mailboxes;
  if (mailboxes.length !== 1 || !only?.address) return { address: "", name: "" };
  return { address: only.address.toLowerCase(), name: only.name || only.address };
}

/** The message ids in a header value (space-separated), leaving out any too long to be one. */
function idsOf(value: string): string[] {
  return value.split(/\s+/).filter((id) => id.length > 0 && id.length <= ID_LIMIT);
}

/** The ids of a References value read up to LIST_LIMIT: one cut there is no id. */
function listOf(value: string): string[] {
  const ids = idsOf(value.slice(0, LIST_LIMIT));
  return value.length > LIST_LIMIT ? ids.slice(0, -1) : ids;
}

/** The root and the newest references: what keeps a thread together in every client. */
function threadOf(references: string[]): string[] {
  if (references.length <= MAX_REFERENCES) return references;
  return [references[0]!, ...references.slice(-(MAX_REFERENCES - 1))];
}

function cut(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** The subject without its leading "Re:"s, in one pass over it. */
export function stripRe(subject: string): string {
  let at = 0;
  for (;;) {
    while (at < subject.length && /\s/.test(subject[at]!)) at++;
    if (subject.slice(at, at + 3).toLowerCase() !== "re:") break;
    at += 3;
  }
  return subject.slice(at).trimEnd();
}
