import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import { usageCommand } from "../usage/usage-command.js";
import type { MagpieFeature } from "./feature.js";

/**
 * Spend: the hard budgets in front of every LLM call (the turn engine's `SpendPort`), the owner's one Pushover
 * alert per cap and period, and `/usage`. The ledger itself is the app's (`services.usage`, built with the LLM
 * provider, which writes every call to it): this feature puts its budgets in front of the calls. The guard reads
 * caps and prices from the live config, so a reload applies at the next call.
 */
export const usageFeature: MagpieFeature = {
  name: "usage",
  provides: ["spend"],
  setup(config, app) {
    warnUnpricedCaps(config, app.logger.child({ component: "usage" }));
    return { spend: app.services.usage, commands: [usageCommand(app.store.db, config.timezone, app.clock)] };
  },
  reload(config, app, change) {
    if (!change.touches("budgets") && !change.touches("llm.prices")) return;
    warnUnpricedCaps(config, app.logger.child({ component: "usage" }));
  },
};

function warnUnpricedCaps(config: MagpieConfig, logger: Logger): void {
  const usdCaps = Object.entries(config.budgets).filter(([, cap]) => cap?.usd !== undefined);
  if (usdCaps.length > 0 && !config.llm.prices[config.llm.model]) {
    logger.warn(
      { model: config.llm.model, caps: usdCaps.map(([name]) => `budgets.${name}.usd`) },
      "USD budgets count only priced calls: set llm.prices for the model, or its calls cost $0 against them",
    );
  }
}
