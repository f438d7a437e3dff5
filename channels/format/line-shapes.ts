/**
 * Block shapes of one Markdown line (heading, list item, horizontal rule), found with anchored prefixes and string
 * trimming: the single regexes they replace (`\s+(.*?)\s*#*\s*$`, `(\s*\1){2,}\s*$`) backtracked quadratically
 * over a line of spaces or markers.
 */

const HEADING_START = /^\s{0,3}#{1,6}\s/;
const LIST_ITEM_START = /^(\s*)[-*+]\s/;
const RULE = /^(?:-{3,}|\*{3,}|_{3,})$/;

/** A heading's text without its `#` markers (closing ones too), or null when the line isn't a heading. */
export function headingOf(line: string): string | null {
  const start = HEADING_START.exec(line);
  if (!start) return null;
  let text = line.slice(start[0].length).trimEnd();
  let end = text.length;
  while (end > 0 && text[end - 1] === "#") end--;
  text = text.slice(0, end);
  return text.trim();
}

/** A list item's indent and text, or null. */
export function listItemOf(line: string): { indent: string; text: string } | null {
  const start = LIST_ITEM_START.exec(line);
  return start ? { indent: start[1]!, text: line.slice(start[0].length).trimStart() } : null;
}

/** True for a horizontal rule: three or more of one of `-`, `*`, `_`, spaces allowed anywhere. */
export function isRule(line: string): boolean {
  return RULE.test(line.replace(/\s/g, ""));
}
