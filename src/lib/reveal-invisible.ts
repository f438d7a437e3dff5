/**
 * Makes invisible and bidirectional characters visible, so what an owner reads in an approval prompt is what
 * runs (DESIGN.md → Approvals). Format characters (Unicode category Cf: U+200B–U+200F zero-width and marks,
 * U+202A–U+202E embeddings and overrides, U+2066–U+2069 isolates, U+2060–U+2064, U+FEFF, U+00AD …), control
 * characters other than newline and tab, and the line/paragraph separators U+2028/U+2029 become `⟦U+XXXX⟧`.
 */
const HIDDEN = /[\p{Cf}\u2028\u2029]|[^\P{Cc}\n\t]/gu;

/** Each character's marker, built once: a megabyte of escapes (CLI output, logs) costs half the time. */
const markers = new Map<string, string>();

function markerOf(char: string): string {
  let marker = markers.get(char);
  if (marker === undefined) {
    marker = `⟦U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}⟧`;
    // Bounded: Cf and Cc hold a few hundred characters.
    if (markers.size < 1024) markers.set(char, marker);
  }
  return marker;
}

export function revealInvisible(text: string): string {
  return text.replace(HIDDEN, markerOf);
}

/** True when `text` holds characters that `revealInvisible` would mark. */
export function hasInvisible(text: string): boolean {
  HIDDEN.lastIndex = 0;
  const found = HIDDEN.test(text);
  HIDDEN.lastIndex = 0;
  return found;
}
