/**
 * Renders the agent's Markdown for a terminal: with ANSI styles when the output is a colour terminal
 * (bold, italic, code, headings, a gutter for code blocks), as clean plain text otherwise. Markers never
 * show: `**bold**` reads as bold, a fence as an indented block.
 */

export interface TerminalStyle {
  /** ANSI escapes (a TTY without NO_COLOR) or none (piped output, logs). */
  color: boolean;
}

import { fenceOf } from "./fence.js";
import { INLINE_PATTERNS, type InlineRule, renderInlineRules } from "./inline-scan.js";
import { headingOf, isRule, listItemOf } from "./line-shapes.js";

const ESC = "\u001b[";
const sgr = (on: string, off: string) => (text: string, style: TerminalStyle) =>
  style.color ? `${ESC}${on}m${text}${ESC}${off}m` : text;

const bold = sgr("1", "22");
const italic = sgr("3", "23");
const strike = sgr("9", "29");
const underline = sgr("4", "24");
const code = sgr("36", "39");
const dim = sgr("2", "22");

const INLINE_RULES: InlineRule<TerminalStyle>[] = [
  { pattern: INLINE_PATTERNS.code, render: (match, style) => code(match[1]!, style) },
  {
    pattern: INLINE_PATTERNS.link,
    render: (match, style) => `${underline(renderInline(match[1]!, style), style)} (${match[2]})`,
  },
  {
    pattern: INLINE_PATTERNS.bold,
    render: (match, style) => bold(renderInline(match[1] ?? match[2]!, style), style),
  },
  {
    pattern: INLINE_PATTERNS.strike,
    render: (match, style) => strike(renderInline(match[1]!, style), style),
  },
  {
    pattern: INLINE_PATTERNS.italic,
    render: (match, style) => italic(renderInline(match[1] ?? match[2]!, style), style),
  },
];

function renderInline(text: string, style: TerminalStyle): string {
  return renderInlineRules(text, INLINE_RULES, style, (plain) => plain);
}

/** Renders a whole Markdown text for the terminal. */
export function renderForTerminal(markdown: string, style: TerminalStyle): string {
  const lines = markdown.split("\n");
  const out: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    const fence = fenceOf(line);
    if (fence) {
      const { marker } = fence;
      index++;
      const body: string[] = [];
      while (index < lines.length && lines[index]!.trim() !== marker) body.push(lines[index++]!);
      // A gutter instead of the fence keeps the block visible when it is copied out of the terminal.
      out.push(...body.map((codeLine) => `${dim("│", style)} ${code(codeLine, style)}`));
      continue;
    }
    out.push(renderLine(line, style));
  }
  return out.join("\n");
}

function renderLine(line: string, style: TerminalStyle): string {
  const heading = headingOf(line);
  if (heading !== null) return bold(underline(renderInline(heading, style), style), style);
  const item = listItemOf(line);
  if (item) return `${item.indent}• ${renderInline(item.text, style)}`;
  const quoted = /^\s*>\s?(.*)$/.exec(line);
  if (quoted) return `${dim("│", style)} ${italic(renderInline(quoted[1]!, style), style)}`;
  if (isRule(line)) return dim("────────", style);
  return renderInline(line, style);
}
