import type { TriggersConfig } from "../config/sections/triggers.js";
import { ConfigError } from "../lib/errors.js";

/**
 * Trigger predicates are parsed and type-checked like at start-up (the CEL engine loads only when there are any):
 * `magpie config check`, `magpie reload` and a live reload refuse a file with a bad `when` as a whole.
 */
export async function checkTriggerPredicates(triggers: TriggersConfig): Promise<void> {
  const withWhen = Object.entries(triggers).filter(([, trigger]) => trigger.when !== undefined);
  if (withWhen.length === 0) return;
  const { predicateProblem } = await import("./predicate.js");
  const problems = withWhen.flatMap(([name, trigger]) => {
    const problem = predicateProblem(trigger.when ?? "");
    return problem ? [`triggers.${name}.when: ${problem}`] : [];
  });
  if (problems.length > 0) throw new ConfigError(problems);
}
