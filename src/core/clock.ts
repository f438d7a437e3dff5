/** Time source; tests pass a fake one. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
