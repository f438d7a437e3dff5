/**
 * Makes invisible and bidirectional characters visible, so what an owner reads in an approval prompt is what
 * runs (DESIGN.md → Approvals). Format characters (Unicode category Cf: U+200B–U+200F zero-width and marks,
 * U+202A–U+202E embeddings and overrides, U+2066–U+2069 isolates, U+2060–U+2064, U+FEFF, U+00AD …), control
 * characters other than newline and tab, and the line/paragraph separators U+2028/U+2029 become `⟦U+XXXX⟧`.
 */
const HIDDEN = /[\p{Cf}\u2028\u2029]|[^\P{Cc}\n\t]/gu;

export function revealInvisible(text: string): string {
  return text.replace(
    HIDDEN,
    (char) => `⟦U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}⟧`,
  );
}

/** True when `text` holds characters that `revealInvisible` would mark. */
export function hasInvisible(text: string): boolean {
  HIDDEN.lastIndex = 0;
  const found = HIDDEN.test(text);
  HIDDEN.lastIndex = 0;
  return found;
}
