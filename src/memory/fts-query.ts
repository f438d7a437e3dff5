/**
 * Turns free user text into safe FTS5 terms: only runs of letters and digits survive, each is quoted, so
 * quotes, NEAR(, *, -, ^, column filters and unbalanced parentheses in the text are just separators.
 */

/** Words too common to help ranking; dropping them keeps OR queries selective (and fast). */
const STOPWORDS = new Set(
  (
    "a an and are as at be but by do does did for from had has have he her his how i if in into is it its " +
    "me my no not of on or our she so than that the their them then there these they this to was we were " +
    "what when where which who whom why will with you your yours about can could would should shall may"
  ).split(" "),
);

const MAX_TERMS = 16;

/** The terms of a query: lower-cased letters/digits runs, stopwords and duplicates removed. */
export function queryTerms(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  const terms: string[] = [];
  for (const word of words) {
    if (STOPWORDS.has(word) || terms.includes(word)) continue;
    terms.push(word);
    if (terms.length === MAX_TERMS) break;
  }
  return terms;
}

/**
 * A term as an FTS5 string. Terms hold only letters, digits and '_', so the quotes cannot be escaped from:
 * user text never reaches FTS5 as syntax.
 */
export const quoteTerm = (term: string): string => `"${term}"`;
