/**
 * Soak sizes: `npm run soak` (MAGPIE_SOAK=full) runs the numbers; `npm test` runs a short version of
 * the same code well under a minute, so CI proves the harness and the invariants on every push.
 */
export const FULL = process.env.MAGPIE_SOAK === "full";

/** Deterministic randomness, so a failing soak can be rerun with MAGPIE_SOAK_SEED and the same choices. */
export function seededRandom(seed = Number(process.env.MAGPIE_SOAK_SEED ?? Date.now() % 100_000)) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4_294_967_296;
  };
  return {
    seed,
    next,
    /** An integer in [low, high]. */
    int: (low: number, high: number) => low + Math.floor(next() * (high - low + 1)),
    chance: (probability: number) => next() < probability,
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
