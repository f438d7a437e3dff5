import { type ParsedMail, simpleParser } from "mailparser";
import { errorMessage } from "../src/lib/errors.js";
import { htmlToMailText } from "./email-html.js";

/**
 * Every conversion mailparser would run over a whole body on the event loop is off: HTML → text (html-to-text,
 * 24 s on a 5.7 MB table), text → HTML and its link detection, cid: image links. The HTML is read by
 * htmlToMailText instead.
 */
const PARSE_OPTIONS = {
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  skipImageLinks: true,
} as const;

/** A mail's body as text, or why it could not be read (too many parts, a header section over 1 MB…). */
export type MailBody = { ok: true; text: string; mail: ParsedMail } | { ok: false; reason: string };

/** Parses a whole mail (mailparser streams it) and reads its text: the plain part, else the HTML as text. */
export async function readMailBody(source: Buffer): Promise<MailBody> {
  let mail: ParsedMail;
  try {
    mail = await parseMail(source);
  } catch (error) {
    return { ok: false, reason: errorMessage(error) };
  }
  const plain = (mail.text ?? "").trim();
  if (plain || typeof mail.html !== "string") return { ok: true, text: plain, mail };
  return { ok: true, text: await htmlToMailText(mail.html), mail };
}

/** mailparser with the conversions above turned off; throws what it throws (too many parts, too big a header). */
export function parseMail(source: Buffer): Promise<ParsedMail> {
  return simpleParser(source, PARSE_OPTIONS);
}
