import { load } from "cheerio";
import type { AnyNode, Element } from "domhandler";

const DROPPED =
  "script, style, noscript, template, svg, iframe, object, embed, canvas, form, button, select, input, textarea, link, meta, head";
const BOILERPLATE =
  "nav, footer, aside, [role=navigation], [role=banner], [role=contentinfo], [aria-hidden=true]";
const BLOCK = new Set([
  "p",
  "div",
  "section",
  "article",
  "main",
  "header",
  "figure",
  "figcaption",
  "address",
  "details",
  "summary",
  "dl",
  "dt",
  "dd",
  "table",
  "tr",
  "hr",
]);

/** The most HTML handed to the parser (characters). */
export const HTML_PARSE_LIMIT = 1024 * 1024;

/**
 * A base64 `data:` URI with a payload of 1,024 characters or more, replaced before parsing (an inline image is no
 * text for the model). Written `{1024}` then `*`, not `{1024,}`: V8 runs the open-ended counted repetition far
 * slower — 0.4–0.65 s through a page with a 3 MB inline image (measured), all of it on the event loop; this form
 * matches the same text in ~16 ms.
 */
const INLINE_DATA = /data:[\w.+/-]*;base64,[\w+/=\s-]{1024}[\w+/=\s-]*/gi;

/** The HTML without big inline `data:` URIs (kept as `data:,` so the element stays). */
export function withoutInlineData(html: string): string {
  return html.includes("data:") ? html.replace(INLINE_DATA, "data:,") : html;
}

export interface ReadableDocument {
  title: string;
  text: string;
}

interface RenderState {
  baseUrl: string;
  listDepth: number;
}

function absoluteUrl(href: string, baseUrl: string): string {
  try {
    return new URL(href, baseUrl).toString();
  } catch {
    return href;
  }
}

function collapse(text: string): string {
  return text.replace(/\s+/g, " ");
}

function renderChildren(nodes: AnyNode[], state: RenderState): string {
  return nodes.map((node) => renderNode(node, state)).join("");
}

function renderNode(node: AnyNode, state: RenderState): string {
  if (node.type === "text") return collapse((node as unknown as { data: string }).data);
  if (node.type !== "tag") return "";
  const element = node as Element;
  const tag = element.name.toLowerCase();
  const inner = () => renderChildren(element.children, state);
  switch (tag) {
    case "h1":
    case "h2":
    case "h3":
    case "h4":
    case "h5":
    case "h6":
      return `\n\n${"#".repeat(Number(tag[1]))} ${inner().trim()}\n\n`;
    case "br":
      return "\n";
    case "a": {
      const text = inner().trim();
      const href = element.attribs.href;
      if (!href || href.startsWith("#") || href.startsWith("javascript:")) return text;
      return text ? `[${text}](${absoluteUrl(href, state.baseUrl)})` : "";
    }
    case "img": {
      const alt = element.attribs.alt?.trim();
      return alt ? `[image: ${alt}]` : "";
    }
    case "pre":
      return `\n\n\`\`\`\n${trimEndOf(textOf(element), "\n")}\n\`\`\`\n\n`;
    case "code":
      return `\`${textOf(element)}\``;
    case "strong":
    case "b":
      return `**${inner().trim()}**`;
    case "em":
    case "i":
      return `*${inner().trim()}*`;
    case "blockquote":
      return `\n\n${inner()
        .trim()
        .split("\n")
        .map((line) => `> ${line}`)
        .join("\n")}\n\n`;
    case "ul":
    case "ol": {
      const nested = { ...state, listDepth: state.listDepth + 1 };
      const indent = "  ".repeat(state.listDepth);
      let index = 0;
      const items = element.children
        .filter(
          (child): child is Element => child.type === "tag" && (child as Element).name.toLowerCase() === "li",
        )
        .map((item) => {
          index++;
          const marker = tag === "ol" ? `${index}.` : "-";
          const body = renderChildren(item.children, nested)
            .trim()
            .replace(/\n{2,}/g, "\n");
          return `${indent}${marker} ${body}`;
        });
      return `\n${items.join("\n")}\n`;
    }
    case "td":
    case "th":
      return `${inner().trim()} | `;
    default:
      return BLOCK.has(tag) ? `\n\n${inner()}\n\n` : inner();
  }
}

function textOf(element: Element): string {
  const parts: string[] = [];
  const visit = (node: AnyNode) => {
    if (node.type === "text") parts.push((node as unknown as { data: string }).data);
    else if ("children" in node) for (const child of (node as Element).children) visit(child);
  };
  visit(element);
  return parts.join("");
}

/**
 * HTML → readable Markdown-ish text: title, headings (#), links ([text](url)), lists (-, 1.), code blocks;
 * scripts, styles, forms and navigation boilerplate dropped. Prefers <main>/<article> when the page has one.
 */
export function htmlToReadable(html: string, baseUrl: string): ReadableDocument {
  // Parsing is linear but not cheap (about a second per MB on a small box, on the event loop): inline data
  // (a base64 image can be megabytes) is dropped first, and what the parser sees is cut at HTML_PARSE_LIMIT —
  // far more HTML than the text a model is given (tools.web.maxChars). htmlparser2 (xml: {xmlMode: false})
  // parses HTML about twice as fast as cheerio's default parse5.
  const whole = withoutInlineData(html);
  const cut = whole.length > HTML_PARSE_LIMIT;
  const source = cut ? whole.slice(0, HTML_PARSE_LIMIT) : whole;
  const cutNote = cut
    ? `\n\n[page cut: only the first ${HTML_PARSE_LIMIT / 1024 / 1024} MB of HTML were read]`
    : "";
  const scan = scanHtml(source);
  if (scan.maxDepth > MAX_PARSE_DEPTH) {
    // Both HTML parsers cheerio offers are quadratic in nesting depth (40,000 unclosed <div>s: 4 s in
    // htmlparser2, 34 s in parse5; 200,000: minutes), and rendering recurses per level: such a page is read as
    // plain text by the linear scan instead.
    return {
      title: scan.title,
      text: `${scan.text}\n\n[page nested too deeply to keep its structure; read as plain text]${cutNote}`,
    };
  }
  const $ = load(source, { xml: { xmlMode: false, decodeEntities: true } });
  const title = collapse($("title").first().text()).trim() || collapse($("h1").first().text()).trim();
  $(DROPPED).remove();
  const root = $("main").first().length
    ? $("main").first()
    : $("article").first().length
      ? $("article").first()
      : $("body").first();
  // From the whole document, not root.find(): cheerio dedupes find()'s roots (root's children) pairwise, which is
  // quadratic in a page of many top-level elements (5 MB of paragraphs took 33 s). Only root is rendered, so
  // removing boilerplate outside it changes nothing.
  $(BOILERPLATE).remove();
  const nodes = root.length ? root.toArray() : $.root().toArray();
  const text = renderChildren(
    nodes.flatMap((node) => (node as Element).children ?? []),
    { baseUrl, listDepth: 0 },
  )
    .split("\n")
    .map((line) => trimEndOf(line, " \t").replace(/^[ \t]+(?=[^-\d \t])/, ""))
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title, text: `${text}${cutNote}` };
}

/**
 * `text` without the trailing characters listed in `characters`. In code: an end-anchored regex like `/\n+$/`
 * backtracks over every run of them that isn't at the end, quadratic in a page of blank lines.
 */
function trimEndOf(text: string, characters: string): string {
  let end = text.length;
  while (end > 0 && characters.includes(text[end - 1]!)) end--;
  return text.slice(0, end);
}

/** Nesting deeper than this (by scanHtml's estimate) is read as plain text instead of parsed. */
const MAX_PARSE_DEPTH = 1_000;

/** Elements that never hold children. */
const VOID = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "link",
  "meta",
  "source",
  "track",
  "wbr",
]);
/** Elements the parser closes by itself when the next one opens: they don't deepen the tree. */
const SELF_CLOSING = new Set(["p", "li", "td", "th", "tr", "dt", "dd", "option"]);
/** Elements whose content is not text for the reader. */
const RAW = new Set(["script", "style", "noscript", "template", "textarea", "title"]);
const BREAKS = new Set([...BLOCK, "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote"]);

/**
 * One linear pass over the HTML, without a parser: an estimate of the deepest nesting (unclosed start tags,
 * leaving out void and self-closing elements), the title, and the page as plain text (tags dropped, raw-text
 * elements skipped, a line break for block elements). Hand-written because the parsers are what is quadratic.
 */
function scanHtml(html: string): { maxDepth: number; title: string; text: string } {
  let depth = 0;
  let maxDepth = 0;
  let title = "";
  const parts: string[] = [];
  let index = 0;
  let lower: string | undefined;
  while (index < html.length) {
    const open = html.indexOf("<", index);
    if (open === -1) {
      parts.push(html.slice(index));
      break;
    }
    if (open > index) parts.push(html.slice(index, open));
    if (html.startsWith("<!--", open)) {
      const end = html.indexOf("-->", open + 4);
      index = end === -1 ? html.length : end + 3;
      continue;
    }
    const close = html.indexOf(">", open + 1);
    if (close === -1) break;
    const inside = html.slice(open + 1, close);
    index = close + 1;
    const closing = inside.startsWith("/");
    const name = tagName(closing ? inside.slice(1) : inside);
    if (!name) continue;
    if (BREAKS.has(name)) parts.push("\n");
    if (closing) {
      if (!VOID.has(name) && !SELF_CLOSING.has(name) && depth > 0) depth--;
      continue;
    }
    if (RAW.has(name)) {
      lower ??= html.toLowerCase();
      const end = lower.indexOf(`</${name}`, index);
      const content = html.slice(index, end === -1 ? html.length : end);
      if (name === "title" && !title) title = collapse(decodeEntities(content)).trim();
      index = end === -1 ? html.length : end;
      continue;
    }
    if (VOID.has(name) || SELF_CLOSING.has(name) || inside.endsWith("/")) continue;
    depth++;
    if (depth > maxDepth) maxDepth = depth;
  }
  const text = decodeEntities(parts.join(""))
    .split("\n")
    .map((line) => collapse(line).trim())
    .filter(Boolean)
    .join("\n");
  return { maxDepth, title, text };
}

/** The lower-case element name at the start of a tag's inside (`div class="x"` → `div`), or "" for `!doctype`. */
function tagName(inside: string): string {
  let end = 0;
  while (end < inside.length && isNameCharacter(inside.charCodeAt(end))) end++;
  return inside.slice(0, end).toLowerCase();
}

function isNameCharacter(code: number): boolean {
  return (
    (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 45
  );
}

/** The character references a plain-text reading needs (the parser decodes them all in the normal path). */
function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|amp|lt|gt|quot|apos|nbsp);/gi, (whole, name: string) => {
    const reference = name.toLowerCase();
    if (reference.startsWith("#x")) return fromCodePoint(Number.parseInt(reference.slice(2), 16), whole);
    if (reference.startsWith("#")) return fromCodePoint(Number.parseInt(reference.slice(1), 10), whole);
    const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };
    return named[reference] ?? whole;
  });
}

function fromCodePoint(code: number, fallback: string): string {
  return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : fallback;
}
