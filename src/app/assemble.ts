import { ConfigError } from "../lib/errors.js";
import type { MagpieFeature, PortName } from "./feature.js";

/**
 * The features in the order they are set up: every feature after the providers of what it needs or uses; among
 * those free to go, the one earliest in `catalogue` (src/app/features.ts), then in list order — so however the list
 * is shuffled, the order, and with it hooks, commands and prompts, stays the same (a stable topological sort). A
 * port nobody enabled provides stops start-up with one sentence per missing provider; `builtIn` ports (the app's
 * own: notifier, access, authority, approvals) always exist.
 */
export function orderFeatures(
  given: readonly MagpieFeature[],
  builtIn: readonly PortName[],
  catalogue: readonly string[] = [],
): MagpieFeature[] {
  const rank = (feature: MagpieFeature) => {
    const index = catalogue.indexOf(feature.name);
    return index === -1 ? catalogue.length : index;
  };
  const features = given
    .map((feature, index) => ({ feature, index }))
    .sort((a, b) => rank(a.feature) - rank(b.feature) || a.index - b.index)
    .map(({ feature }) => feature);
  const providers = new Map<PortName, MagpieFeature[]>();
  for (const feature of features)
    for (const port of feature.provides ?? []) providers.set(port, [...(providers.get(port) ?? []), feature]);
  const problems: string[] = [];
  for (const feature of features) {
    for (const port of feature.needs ?? []) {
      if (!providers.has(port) && !builtIn.includes(port))
        problems.push(`feature '${feature.name}' needs '${port}', which no enabled feature provides`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const before = (feature: MagpieFeature): MagpieFeature[] =>
    [...(feature.needs ?? []), ...(feature.uses ?? [])].flatMap((port) =>
      (providers.get(port) ?? []).filter((provider) => provider !== feature),
    );
  const ordered: MagpieFeature[] = [];
  const placed = new Set<MagpieFeature>();
  // Kahn's algorithm, taking the first ready feature in list order each round (the list is short: ~15 features).
  while (ordered.length < features.length) {
    const next = features.find(
      (feature) => !placed.has(feature) && before(feature).every((provider) => placed.has(provider)),
    );
    if (!next) {
      const stuck = features.filter((feature) => !placed.has(feature)).map((feature) => feature.name);
      throw new ConfigError([`features need each other in a circle: ${stuck.join(", ")}`]);
    }
    placed.add(next);
    ordered.push(next);
  }
  return ordered;
}
