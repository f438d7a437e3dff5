/**
 * Renders the agent's Markdown for a terminal: with ANSI styles when the output is a colour terminal
 * (bold, italic, code, headings, a gutter for code blocks), as clean plain text otherwise. Markers never
 * show: `**bold**` reads as bold, a fence as an indented block.
 */

export interface TerminalStyle {
  /** ANSI escapes (a TTY without NO_COLOR) or none (piped output, logs). */
  color: boolean;
}

const ESC = "\u001b[";
const sgr = (on: string, off: string) => (text: string, style: TerminalStyle) =>
  style.color ? `${ESC}${on}m${text}${ESC}${off}m` : text;

const bold = sgr("1", "22");
const italic = sgr("3", "23");
const strike = sgr("9", "29");
const underline = sgr("4", "24");
const code = sgr("36", "39");
const dim = sgr("2", "22");

interface InlineRule {
  pattern: RegExp;
  render(match: RegExpExecArray, style: TerminalStyle): string;
}

const INLINE_RULES: InlineRule[] = [
  { pattern: /`([^`\n]+)`/, render: (match, style) => code(match[1]!, style) },
  {
    pattern: /\[([^\]\n]+)\]\(([^)\s]+)\)/,
    render: (match, style) => `${underline(renderInline(match[1]!, style), style)} (${match[2]})`,
  },
  {
    pattern: /\*\*(?=\S)([^\n]*?\S)\*\*|__(?=\S)([^\n]*?\S)__/,
    render: (match, style) => bold(renderInline(match[1] ?? match[2]!, style), style),
  },
  {
    pattern: /~~(?=\S)([^\n]*?\S)~~/,
    render: (match, style) => strike(renderInline(match[1]!, style), style),
  },
  {
    // Not snake_case or 2*3*4: the markers must not touch word characters on the outside.
    pattern: /(?<![\w*])\*(?=[^\s*])([^\n*]*?[^\s*])\*(?![\w*])|(?<!\w)_(?=[^\s_])([^\n_]*?[^\s_])_(?!\w)/,
    render: (match, style) => italic(renderInline(match[1] ?? match[2]!, style), style),
  },
];

function renderInline(text: string, style: TerminalStyle): string {
  let out = "";
  let rest = text;
  while (rest.length > 0) {
    let best: { match: RegExpExecArray; rule: InlineRule } | null = null;
    for (const rule of INLINE_RULES) {
      const match = rule.pattern.exec(rest);
      if (match && (best === null || match.index < best.match.index)) best = { match, rule };
    }
    if (!best) return out + rest;
    out += rest.slice(0, best.match.index) + best.rule.render(best.match, style);
    rest = rest.slice(best.match.index + best.match[0].length);
  }
  return out;
}

const FENCE = /^\s*(```|~~~)\s*([\w+#.-]*)\s*$/;

/** Renders a whole Markdown text for the terminal. */
export function renderForTerminal(markdown: string, style: TerminalStyle): string {
  const lines = markdown.split("\n");
  const out: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1]!;
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
  const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
  if (heading) return bold(underline(renderInline(heading[1]!, style), style), style);
  const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
  if (bullet) return `${bullet[1]}• ${renderInline(bullet[2]!, style)}`;
  const quoted = /^\s*>\s?(.*)$/.exec(line);
  if (quoted) return `${dim("│", style)} ${italic(renderInline(quoted[1]!, style), style)}`;
  if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) return dim("────────", style);
  return renderInline(line, style);
}
