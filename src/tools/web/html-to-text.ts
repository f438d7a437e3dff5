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
  const $ = load(html);
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
  return { title, text };
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
