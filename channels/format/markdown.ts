/**
 * Renders the agent's Markdown into each platform's dialect. A tiny tokenizer, not a full CommonMark parser:
 * it covers what models actually write (fences, inline code, bold, italic, strike, links, headings, quotes,
 * lists) and escapes everything else, so user text can never break the platform's parser.
 */

import { fenceOf } from "./fence.js";
import { INLINE_PATTERNS, type InlineRule, renderInlineRules } from "./inline-scan.js";
import { headingOf, isRule, listItemOf } from "./line-shapes.js";

export type Dialect = "telegram-html" | "slack-mrkdwn" | "discord" | "plain";

/** Escapes text for the dialect (outside any markup). */
export function escapeText(text: string, dialect: Dialect): string {
  switch (dialect) {
    case "telegram-html":
      return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    case "slack-mrkdwn":
      // Slack treats only these three as control characters (api.slack.com/reference/surfaces/formatting#escaping).
      return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    default:
      return text;
  }
}

const wrap = (dialect: Dialect, tags: Partial<Record<Dialect, [string, string]>>, inner: string): string => {
  const pair = tags[dialect];
  return pair ? `${pair[0]}${inner}${pair[1]}` : inner;
};

const INLINE_RULES: InlineRule<Dialect>[] = [
  {
    pattern: INLINE_PATTERNS.code,
    render: (match, dialect) => {
      const code = match[1]!;
      if (dialect === "telegram-html") return `<code>${escapeText(code, dialect)}</code>`;
      if (dialect === "plain") return code;
      return `\`${escapeText(code, dialect)}\``;
    },
  },
  {
    pattern: INLINE_PATTERNS.link,
    render: (match, dialect) => {
      const label = renderInline(match[1]!, dialect);
      const url = match[2]!;
      if (dialect === "telegram-html")
        return `<a href="${escapeText(url, dialect).replace(/"/g, "&quot;")}">${label}</a>`;
      if (dialect === "slack-mrkdwn") return `<${url.replace(/[<>|]/g, encodeURIComponent)}|${label}>`;
      if (dialect === "plain") return `${label} (${url})`;
      return `[${label}](${url})`;
    },
  },
  {
    pattern: INLINE_PATTERNS.bold,
    render: (match, dialect) =>
      wrap(
        dialect,
        { "telegram-html": ["<b>", "</b>"], "slack-mrkdwn": ["*", "*"], discord: ["**", "**"] },
        renderInline(match[1] ?? match[2]!, dialect),
      ),
  },
  {
    pattern: INLINE_PATTERNS.strike,
    render: (match, dialect) =>
      wrap(
        dialect,
        { "telegram-html": ["<s>", "</s>"], "slack-mrkdwn": ["~", "~"], discord: ["~~", "~~"] },
        renderInline(match[1]!, dialect),
      ),
  },
  {
    pattern: INLINE_PATTERNS.italic,
    render: (match, dialect) =>
      wrap(
        dialect,
        { "telegram-html": ["<i>", "</i>"], "slack-mrkdwn": ["_", "_"], discord: ["*", "*"] },
        renderInline(match[1] ?? match[2]!, dialect),
      ),
  },
];

/** Renders one line of inline Markdown; text between markup is escaped. */
export function renderInline(text: string, dialect: Dialect): string {
  return renderInlineRules(text, INLINE_RULES, dialect, (plain) => escapeText(plain, dialect));
}

/** Renders a whole Markdown text to the dialect. Discord speaks Markdown natively and gets it unchanged. */
export function renderMarkdown(markdown: string, dialect: Dialect): string {
  if (dialect === "discord") return markdown;
  const lines = markdown.split("\n");
  const out: string[] = [];
  let quote: string[] = [];
  const flushQuote = () => {
    if (quote.length === 0) return;
    if (dialect === "telegram-html") out.push(`<blockquote>${quote.join("\n")}</blockquote>`);
    else if (dialect === "slack-mrkdwn") out.push(...quote.map((line) => `> ${line}`));
    else out.push(...quote.map((line) => `> ${line}`));
    quote = [];
  };
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    const fence = fenceOf(line);
    if (fence) {
      flushQuote();
      const { marker, language } = fence;
      const body: string[] = [];
      index++;
      while (index < lines.length && lines[index]!.trim() !== marker) body.push(lines[index++]!);
      out.push(renderCodeBlock(body.join("\n"), language, dialect));
      continue;
    }
    const quoted = /^\s*>\s?(.*)$/.exec(line);
    if (quoted) {
      quote.push(renderInline(quoted[1]!, dialect));
      continue;
    }
    flushQuote();
    out.push(renderLine(line, dialect));
  }
  flushQuote();
  return out.join("\n");
}

function renderLine(line: string, dialect: Dialect): string {
  const heading = headingOf(line);
  if (heading !== null) {
    const inner = renderInline(heading, dialect);
    if (dialect === "telegram-html") return `<b>${inner}</b>`;
    if (dialect === "slack-mrkdwn") return `*${inner}*`;
    return inner;
  }
  const item = listItemOf(line);
  if (item && dialect !== "plain") return `${item.indent}• ${renderInline(item.text, dialect)}`;
  if (isRule(line)) return dialect === "plain" ? line : "──────";
  return renderInline(line, dialect);
}

function renderCodeBlock(code: string, language: string, dialect: Dialect): string {
  switch (dialect) {
    case "telegram-html": {
      const escaped = escapeText(code, dialect);
      return language
        ? `<pre><code class="language-${escapeText(language, dialect)}">${escaped}</code></pre>`
        : `<pre>${escaped}</pre>`;
    }
    case "slack-mrkdwn":
      return `\`\`\`\n${escapeText(code, dialect)}\n\`\`\``;
    case "plain":
      return code;
    default:
      return `\`\`\`${language}\n${code}\n\`\`\``;
  }
}
