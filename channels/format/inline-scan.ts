/**
 * Inline Markdown both renderers share. Every pattern keeps its inner text from running past the next opening
 * marker, so a line of unclosed markers costs one pass, and the scanner remembers each rule's next match instead
 * of searching the rest of the line again after every match.
 */

export interface InlineRule<Context> {
  /** Global (`g`): searched from a position with `lastIndex`. */
  pattern: RegExp;
  render(match: RegExpExecArray, context: Context): string;
}

export const INLINE_PATTERNS = {
  code: /`([^`\n]+)`/g,
  link: /\[([^[\]\n]+)\]\(([^()[\]\s]+)\)/g,
  bold: /\*\*([^\s*](?:[^\n*]*[^\s*])?)\*\*|__([^\s_](?:[^\n_]*[^\s_])?)__/g,
  strike: /~~([^\s~](?:[^\n~]*[^\s~])?)~~/g,
  // Not snake_case or 2*3*4: the markers must not touch word characters on the outside.
  italic: /(?<![\w*])\*([^\s*](?:[^\n*]*[^\s*])?)\*(?![\w*])|(?<!\w)_([^\s_](?:[^\n_]*[^\s_])?)_(?!\w)/g,
};

/** Renders one line: the earliest match of any rule wins (the first rule on a tie); `plain` takes the rest. */
export function renderInlineRules<Context>(
  text: string,
  rules: ReadonlyArray<InlineRule<Context>>,
  context: Context,
  plain: (text: string) => string,
): string {
  const next: Array<RegExpExecArray | null | undefined> = rules.map(() => undefined);
  let out = "";
  let position = 0;
  while (position < text.length) {
    let best = -1;
    for (let index = 0; index < rules.length; index++) {
      let match = next[index];
      // Searched again only when its last match was overtaken by another rule's; null stays null.
      if (match === undefined || (match !== null && match.index < position)) {
        const pattern = rules[index]!.pattern;
        pattern.lastIndex = position;
        match = pattern.exec(text);
        next[index] = match;
      }
      if (match && (best < 0 || match.index < next[best]!.index)) best = index;
    }
    if (best < 0) break;
    const match = next[best]!;
    out += plain(text.slice(position, match.index)) + rules[best]!.render(match, context);
    position = match.index + match[0].length;
  }
  return out + plain(text.slice(position));
}
