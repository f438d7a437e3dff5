import type { MagpieConfig } from "./schema.js";

/** A value that a config reload may replace: read it with `current()` at use, never keep what it returned. */
export interface Live<T> {
  current(): T;
}

/** A `Live` and the one function that replaces its value (kept by whoever applies reloads). */
export interface LiveSource<T> extends Live<T> {
  set(next: T): void;
}

/** A live value starting at `initial`. */
export function liveValue<T>(initial: T): LiveSource<T> {
  let value = initial;
  return {
    current: () => value,
    set(next) {
      value = next;
    },
  };
}

/**
 * A live value derived from another (`settingsOf(config)`), derived again at each read: it keeps nothing of an
 * old value (deriving is a few property reads).
 */
export function liveMap<T, R>(source: Live<T>, derive: (value: T) => R): Live<R> {
  return { current: () => derive(source.current()) };
}

/** Freezes `value` and everything reachable from it (a loaded config is never edited: a reload replaces it). */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
  return Object.freeze(value);
}

/**
 * The config as modules that read `config.section.key` at use see it: every read goes to the live config's current
 * value, and every write throws. Modules that keep `config.section` (or a value under it) past start-up see the
 * old one: read through this view, or take a `Live`, instead.
 */
export function liveConfigView(live: Live<MagpieConfig>): MagpieConfig {
  const current = () => live.current() as unknown as Record<PropertyKey, unknown>;
  const refuse = (key: PropertyKey): never => {
    throw new TypeError(
      `The running config is read-only (tried to change "${String(key)}"): a reload replaces it.`,
    );
  };
  // The target stays an empty, extensible object: the proxy's invariants then allow answers from `live`.
  // Why a Proxy: dozens of modules read `config.x.y` at use; the view gives them the live value without a rewrite.
  const view = new Proxy<Record<PropertyKey, unknown>>(
    {},
    {
      get: (_target, key) => current()[key],
      has: (_target, key) => key in current(),
      ownKeys: () => Reflect.ownKeys(current()),
      getOwnPropertyDescriptor: (_target, key) => {
        const descriptor = Reflect.getOwnPropertyDescriptor(current(), key);
        return descriptor ? { ...descriptor, configurable: true, writable: false } : undefined;
      },
      set: (_target, key) => refuse(key),
      defineProperty: (_target, key) => refuse(key),
      deleteProperty: (_target, key) => refuse(key),
    },
  );
  return view as unknown as MagpieConfig;
}
