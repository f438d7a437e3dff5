const FENCE = /^(```|~~~)\s*([\w+#.-]*)$/;

/**
 * The fence a line opens or closes (```` ``` ```` or `~~~`, maybe a language), or null. The line is trimmed
 * first: one regex with `\s*` on both sides of an empty language backtracks quadratically over a line of spaces.
 */
export function fenceOf(line: string): { marker: string; language: string } | null {
  const fence = FENCE.exec(line.trim());
  return fence ? { marker: fence[1]!, language: fence[2] ?? "" } : null;
}
