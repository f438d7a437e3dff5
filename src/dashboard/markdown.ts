import { createHash } from "node:crypto";
import { raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import markdownIt, { type MarkdownIt } from "markdown-it";

/**
 * Markdown from the model (or an owner) as HTML for the dashboard, with markdown-it. Everything in it is outside
 * text, so:
 * - raw HTML is off (`html: false`): `<script>`, `<img onerror>`, `<svg onload>` and HTML blocks show as text;
 * - a link may only go to http:, https:, mailto: or a relative path (markdown-it's own check lets `data:image/…`,
 *   `ftp:`, `tel:` and any unknown scheme through); a refused link shows as the text that was written;
 * - an image is shown as a link to it, never as `<img>`: the browser would fetch whatever URL the model wrote
 *   when the owner opens the page, and tell its server the owner's address (and that they are reading now).
 * Bounded work: markdown-it is linear, but hostile shapes (`[[[[`, `|a|` tables) cost it a few µs a character,
 * and a page refresh renders a whole transcript. So a message is parsed as Markdown up to `MARKDOWN_LIMIT`
 * characters (the rest is escaped plain text, cut at `SHOWN_LIMIT`), a page parses at most its budget's worth
 * (older messages past it show as plain text), and rendered messages are cached, so a refresh parses only what
 * is new.
 */

/** Characters of one message parsed as Markdown; past them the text shows as plain, escaped text. */
export const MARKDOWN_LIMIT = 20_000;
/** Characters of one message shown at all; the rest is counted in a note. */
export const SHOWN_LIMIT = 200_000;
/** Characters of Markdown one page render parses (what the cache has doesn't count). */
export const PAGE_MARKDOWN_BUDGET = 200_000;
const CACHE_ENTRIES = 500;
const CACHE_CHARS = 8_000_000;

const ALLOWED_SCHEMES = new Set(["http", "https", "mailto"]);
const LINK_REL = "noopener noreferrer nofollow";

/**
 * An allowed link target: http(s), mailto, or relative. Whatever has a scheme-like start (text before a `:` that
 * comes before any `/`, `?` or `#`) must be one of the three exactly, so a scheme disguised with a tab, a line break
 * or a control character (which browsers drop) is refused too.
 */
export function isAllowedLink(url: string): boolean {
  const end = url.search(/[:/?#]/);
  if (end === -1 || url[end] !== ":") return true;
  return ALLOWED_SCHEMES.has(url.slice(0, end).toLowerCase());
}

function createRenderer(): MarkdownIt {
  const markdown = new markdownIt({ html: false, linkify: true, breaks: true, typographer: false });
  markdown.validateLink = isAllowedLink;
  const rules = markdown.renderer.rules;
  const defaultLinkOpen =
    rules.link_open ?? ((tokens, index, options, _env, self) => self.renderToken(tokens, index, options));
  rules.link_open = (tokens, index, options, env, self) => {
    const token = tokens[index]!;
    // markdown-it blanks a refused inline link's target; checked again here, whichever rule made the link.
    const href = String(token.attrGet("href") ?? "");
    if (!href || !isAllowedLink(href)) token.attrs = [];
    else token.attrSet("rel", LINK_REL);
    return defaultLinkOpen(tokens, index, options, env, self);
  };
  rules.image = (tokens, index, options, env, self) => {
    const token = tokens[index]!;
    const src = String(token.attrGet("src") ?? "");
    const alt = self.renderInlineAsText(token.children ?? [], options, env) || "image";
    const label = `image: ${alt}`;
    const escapeHtml = markdown.utils.escapeHtml;
    if (!src || !isAllowedLink(src)) return `<span class="md-image">[${escapeHtml(label)}]</span>`;
    return `<a class="md-image" href="${escapeHtml(src)}" rel="${LINK_REL}" title="not loaded: opens ${escapeHtml(src)}">[${escapeHtml(label)}]</a>`;
  };
  return markdown;
}

let renderer: MarkdownIt | undefined;
const cache = new Map<string, string>();
let cachedChars = 0;

/** How much Markdown one page may still parse: made once per page render and handed to each `renderMarkdown`. */
export class MarkdownBudget {
  constructor(public remaining = PAGE_MARKDOWN_BUDGET) {}
}

/**
 * The Markdown `text` as safe HTML inside `<div class="md">`, for hono's `html` templates. With a `budget` that
 * is spent, a text the cache doesn't have shows as plain, escaped text instead.
 */
export function renderMarkdown(text: string, budget?: MarkdownBudget): HtmlEscapedString {
  const key = createHash("sha256").update(text).digest("base64");
  const cached = cache.get(key);
  if (cached !== undefined) {
    // Most recently used last: the oldest entries go first.
    cache.delete(key);
    cache.set(key, cached);
    return raw(cached);
  }
  renderer ??= createRenderer();
  const cut = cutAt(text, MARKDOWN_LIMIT);
  if (budget && budget.remaining < cut) return raw(`<div class="md">${plainText(text, 0)}</div>`);
  if (budget) budget.remaining -= cut;
  const body = renderer.render(text.slice(0, cut)).trim() + (cut < text.length ? plainText(text, cut) : "");
  const rendered = `<div class="md">${body}</div>`;
  remember(key, rendered);
  return raw(rendered);
}

/** The text from `from` on as escaped plain text, up to `SHOWN_LIMIT` characters of the whole, then a note. */
function plainText(text: string, from: number): string {
  const escapeHtml = (renderer ?? createRenderer()).utils.escapeHtml;
  const end = Math.min(text.length, Math.max(from, SHOWN_LIMIT));
  const hidden = text.length - end;
  return `<pre class="md-plain">${escapeHtml(text.slice(from, end))}</pre>${
    hidden > 0 ? `<p class="md-cut">(${hidden.toLocaleString("en")} more characters not shown)</p>` : ""
  }`;
}

function remember(key: string, rendered: string): void {
  if (rendered.length > CACHE_CHARS / 4) return;
  cache.set(key, rendered);
  cachedChars += rendered.length;
  for (const [oldKey, old] of cache) {
    if (cache.size <= CACHE_ENTRIES && cachedChars <= CACHE_CHARS) break;
    cache.delete(oldKey);
    cachedChars -= old.length;
  }
}

/** Where the Markdown part ends: at `limit`, or at the last line break before it when there is one nearby. */
function cutAt(text: string, limit: number): number {
  if (text.length <= limit) return text.length;
  const lineEnd = text.lastIndexOf("\n", limit);
  return lineEnd > limit / 2 ? lineEnd + 1 : limit;
}
