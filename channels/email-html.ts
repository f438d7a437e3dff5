import { setImmediate as turn } from "node:timers/promises";

/** HTML characters converted between two turns of the event loop: a few milliseconds of work on a small box. */
const SLICE_CHARS = 64 * 1024;

/** Elements whose content is no text for the reader. */
const RAW = new Set(["script", "style", "head", "title", "template", "noscript", "xml"]);
/** Elements that stand apart as a paragraph: a blank line before and after. */
const PARAGRAPH = new Set([
  "blockquote",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "hr",
  "ol",
  "p",
  "pre",
  "table",
  "ul",
]);
/** Elements that start and end a line. */
const LINE = new Set([
  "address",
  "article",
  "aside",
  "caption",
  "center",
  "dd",
  "div",
  "dl",
  "dt",
  "fieldset",
  "figcaption",
  "figure",
  "footer",
  "form",
  "header",
  "main",
  "nav",
  "section",
  "tbody",
  "thead",
  "tfoot",
  "tr",
]);
/** Elements that separate what they hold from what came before on the same line. */
const CELL = new Set(["td", "th"]);

/** The most HTML read: far more text than a model is given (agent.maxInboundChars), bounded work for any mail. */
export const MAIL_HTML_LIMIT = 4 * 1024 * 1024;

/** Plain text built line by line: whitespace collapsed as HTML does, at most one blank line in a row. */
class TextLines {
  private readonly lines: string[] = [];
  private current: string[] = [];
  private blank = true;
  /** Inside `<pre>`: line breaks and spaces are kept. */
  pre = 0;

  text(text: string): void {
    if (!this.pre) {
      this.current.push(text.replace(/\s+/g, " "));
      return;
    }
    const lines = text.split("\n");
    for (const [index, line] of lines.entries()) {
      if (index > 0) this.lineBreak();
      this.current.push(line);
    }
  }

  raw(text: string): void {
    this.current.push(text);
  }

  /** Ends the line being written, if it holds anything. */
  endLine(): void {
    const line = this.current.join("").trim();
    this.current = [];
    if (!line) return;
    this.lines.push(line);
    this.blank = false;
  }

  /** `<br>`: ends the line, or makes a blank one. */
  lineBreak(): void {
    const written = this.current.join("").trim();
    if (written) this.endLine();
    else this.blankLine();
    this.current = [];
  }

  /** Ends the line and leaves one blank line (never two in a row, none at the start). */
  blankLine(): void {
    this.endLine();
    if (this.blank) return;
    this.lines.push("");
    this.blank = true;
  }

  done(): string {
    this.endLine();
    while (this.lines.at(-1) === "") this.lines.pop();
    return this.lines.join("\n");
  }
}

/**
 * A mail's HTML part as plain text, in time linear in its length and without holding the event loop: at most
 * MAIL_HTML_LIMIT characters are read, in slices of SLICE_CHARS with a turn of the loop between them. Tags are
 * dropped (paragraphs apart, a line per block element and `<br>`, `- ` for list items, a space between table cells), script,
 * style and head are skipped, a link keeps its address after its text, character references are decoded.
 *
 * Hand-written on purpose: html-to-text (mailparser's converter) took 24 s on a 5.7 MB table and is superlinear
 * in table rows, and the HTML parsers at hand (htmlparser2, parse5) are quadratic in nesting depth (100,000
 * unclosed `<b>` then `</i>`: 45 s in htmlparser2). A mail needs its words, not its layout.
 */
export async function htmlToMailText(whole: string): Promise<string> {
  const cut = whole.length > MAIL_HTML_LIMIT;
  const html = cut ? whole.slice(0, MAIL_HTML_LIMIT) : whole;
  const out = new TextLines();
  let lower: string | undefined;
  let href = "";
  let index = 0;
  let sliceEnd = SLICE_CHARS;
  // The next "<" at or after index, found once: a long text run is read in slices without searching it again.
  let open = -2;
  while (index < html.length) {
    if (index >= sliceEnd) {
      await turn();
      sliceEnd = index + SLICE_CHARS;
    }
    if (open !== -1 && open < index) open = html.indexOf("<", index);
    const textEnd = open === -1 ? html.length : open;
    if (textEnd - index > SLICE_CHARS) {
      let end = index + SLICE_CHARS;
      // A character reference is at most 10 characters: one cut in two is moved before its "&".
      const amp = html.slice(end - 10, end).lastIndexOf("&");
      if (amp !== -1) end = end - 10 + amp;
      out.text(decodeEntities(html.slice(index, end)));
      index = end;
      continue;
    }
    if (textEnd > index) out.text(decodeEntities(html.slice(index, textEnd)));
    if (open === -1) break;
    if (html.startsWith("<!--", open)) {
      const end = html.indexOf("-->", open + 4);
      index = end === -1 ? html.length : end + 3;
      continue;
    }
    if (!startsTag(html.charCodeAt(open + 1))) {
      // "a < b": a "<" that opens no tag is text, as a browser reads it.
      out.raw("<");
      index = open + 1;
      continue;
    }
    const close = html.indexOf(">", open + 1);
    // An unclosed tag to the end: what came before it is the text.
    if (close === -1) break;
    index = close + 1;
    const closing = html.charCodeAt(open + 1) === 47;
    const name = tagName(html, closing ? open + 2 : open + 1, close);
    if (!name) continue;
    if (!closing && RAW.has(name)) {
      lower ??= html.toLowerCase();
      const end = lower.indexOf(`</${name}`, index);
      index = end === -1 ? html.length : end;
      continue;
    }
    if (name === "pre") out.pre = Math.max(0, out.pre + (closing ? -1 : 1));
    if (name === "br") out.lineBreak();
    else if (PARAGRAPH.has(name)) out.blankLine();
    else if (LINE.has(name)) out.endLine();
    else if (name === "li") {
      out.endLine();
      if (!closing) out.raw("- ");
    } else if (CELL.has(name) && !closing) out.raw(" ");
    else if (name === "a") {
      if (closing && href) out.raw(` <${href}>`);
      href = closing ? "" : linkOf(html.slice(open + 1, close));
    }
  }
  const text = out.done();
  return cut
    ? `${text}\n\n[This mail's HTML is ${whole.length} characters; only the first ${MAIL_HTML_LIMIT} were read.]`
    : text;
}

/** The lower-case element name starting at `start` (`div class="x"` → `div`), or "" for `!doctype`. */
function tagName(html: string, start: number, end: number): string {
  let at = start;
  while (at < end && isNameCharacter(html.charCodeAt(at))) at++;
  return at - start > 10 ? "" : html.slice(start, at).toLowerCase();
}

/** Whether the character after a "<" can open a tag, a closing tag, a comment or a declaration. */
function startsTag(code: number): boolean {
  return (
    (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 47 || code === 33 || code === 63
  );
}

function isNameCharacter(code: number): boolean {
  return (
    (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 45
  );
}

/** The http(s) or mailto address of an `<a href=…>` tag's inside; "" for anything else. */
function linkOf(inside: string): string {
  const at = inside.toLowerCase().indexOf("href=");
  if (at === -1) return "";
  let start = at + 5;
  const quote = inside[start];
  let end: number;
  if (quote === '"' || quote === "'") {
    start++;
    end = inside.indexOf(quote, start);
  } else {
    end = inside.indexOf(" ", start);
  }
  const url = decodeEntities(inside.slice(start, end === -1 ? inside.length : end)).trim();
  return /^(?:https?:|mailto:)/i.test(url) && url.length <= 2048 ? url : "";
}

const NAMED: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
  copy: "©",
  reg: "®",
  hellip: "…",
  mdash: "—",
  ndash: "–",
  lsquo: "‘",
  rsquo: "’",
  ldquo: "“",
  rdquo: "”",
  euro: "€",
  bull: "•",
  middot: "·",
  zwnj: "",
  zwj: "",
};

/** The character references a plain-text reading needs; bounded quantifiers keep it linear. */
function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi, (whole, name: string) => {
    const reference = name.toLowerCase();
    if (reference.startsWith("#x")) return fromCodePoint(Number.parseInt(reference.slice(2), 16), whole);
    if (reference.startsWith("#")) return fromCodePoint(Number.parseInt(reference.slice(1), 10), whole);
    return NAMED[reference] ?? whole;
  });
}

function fromCodePoint(code: number, fallback: string): string {
  return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : fallback;
}
