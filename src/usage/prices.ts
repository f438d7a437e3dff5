/** `llm.prices`: USD per million tokens, per model name. */
export type PriceList = Readonly<Record<string, { input: number; output: number }>>;

/** What a call cost in USD, or null when `model` has no price (the ledger keeps the tokens either way). */
export function costOf(
  prices: PriceList,
  model: string,
  promptTokens: number,
  completionTokens: number,
): number | null {
  const price = prices[model];
  if (!price) return null;
  return (promptTokens * price.input + completionTokens * price.output) / 1_000_000;
}
