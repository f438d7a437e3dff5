import type { FetchMessageObject } from "imapflow";

/** Header fields fetched with the envelope: what decides the sender, threads the mail and spots a machine. */
export const ENVELOPE_FIELDS = ["authentication-results", "references", "auto-submitted", "precedence"];
/** References kept per thread: enough for every client to thread, bounded however long the thread grows. */
export const MAX_REFERENCES = 20;
/** A display name longer than this is cut (it is shown in logs, traces and the dashboard). */
const NAME_LIMIT = 200;
/** A subject longer than this is cut: a reply's "Re: …" and the thread state carry it. */
const SUBJECT_LIMIT = 1_000;
/** RFC 5322's line limit: a longer message id is no message id (and would key the inbox and threads). */
const ID_LIMIT = 998;

/** What a mail's envelope and a few of its header fields say, read before its body is fetched. */
export interface MailEnvelope {
  /** Lower-cased bare address of the single From mailbox; "" when there is none or there are several. */
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

/** Reads the envelope and ENVELOPE_FIELDS of an IMAP fetch. Linear in their length. */
export function readEnvelope(fetched: Pick<FetchMessageObject, "envelope" | "headers">): MailEnvelope {
  const envelope = fetched.envelope ?? {};
  const fields = headerFields(fetched.headers?.toString("utf8") ?? "");
  const valuesOf = (name: string) => fields.filter(([key]) => key === name).map(([, value]) => value);
  const mailboxes = envelope.from ?? [];
  const [only] = mailboxes;
  const single = mailboxes.length === 1 && only?.address ? only : undefined;
  const submitted = (valuesOf("auto-submitted")[0] ?? "no").toLowerCase();
  const precedence = (valuesOf("precedence")[0] ?? "").toLowerCase();
  const inReplyTo = idsOf(envelope.inReplyTo ?? "")[0];
  const messageId = idsOf(envelope.messageId ?? "")[0];
  return {
    from: single?.address?.toLowerCase() ?? "",
    fromName: cut((single?.name || single?.address) ?? "", NAME_LIMIT),
    subject: cut((envelope.subject ?? "").trim(), SUBJECT_LIMIT),
    ...(messageId ? { messageId } : {}),
    ...(inReplyTo ? { inReplyTo } : {}),
    references: threadOf(idsOf(valuesOf("references").join(" "))),
    authenticationResults: valuesOf("authentication-results"),
    automatic: submitted !== "no" || ["bulk", "junk", "list", "auto_reply"].includes(precedence),
  };
}

/**
 * Raw header lines as `[lower-case name, unfolded value]`, in order. Hand-written (a dozen lines) because
 * mailparser's header parser gives up on a header section over 1 MB, and this must read whatever a sender wrote.
 */
export function headerFields(raw: string): Array<[string, string]> {
  const fields: Array<[string, string]> = [];
  for (const line of raw.split("\n")) {
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (!text) continue;
    const last = fields.at(-1);
    if ((text.startsWith(" ") || text.startsWith("\t")) && last) {
      last[1] += ` ${text.trim()}`;
      continue;
    }
    const colon = text.indexOf(":");
    if (colon <= 0) continue;
    fields.push([text.slice(0, colon).trim().toLowerCase(), text.slice(colon + 1).trim()]);
  }
  return fields;
}

/** The message ids in a header value (space-separated), leaving out any too long to be one. */
function idsOf(value: string): string[] {
  return value.split(/\s+/).filter((id) => id.length > 0 && id.length <= ID_LIMIT);
}

/** The root and the newest references: what keeps a thread together in every client. */
function threadOf(references: string[]): string[] {
  if (references.length <= MAX_REFERENCES) return references;
  return [references[0]!, ...references.slice(-(MAX_REFERENCES - 1))];
}

function cut(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** The subject without its leading "Re:"s. A loop over indices: re-slicing per "Re:" is quadratic in a long run. */
export function stripRe(subject: string): string {
  let at = 0;
  for (;;) {
    while (at < subject.length && /\s/.test(subject[at]!)) at++;
    if (subject.slice(at, at + 3).toLowerCase() !== "re:") break;
    at += 3;
  }
  return subject.slice(at).trimEnd();
}
