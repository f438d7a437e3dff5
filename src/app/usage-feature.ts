import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import { SpendGuard } from "../usage/spend-guard.js";
import { usageCommand } from "../usage/usage-command.js";
import type { MagpieFeature } from "./feature.js";

/** Where memory's embeddings are filed in the ledger: no turn, no chat — memory's own line. */
const MEMORY = { origin: "memory", sessionKey: "memory" };

/**
 * Spend: the usage ledger and the hard budgets around every LLM call (the turn engine's `SpendPort`), memory's
 * embeddings in the same ledger, the owner's one Pushover alert per cap and period, and `/usage`. Set up after
 * the memory feature, whose embedder it listens to.
 */
export const usageFeature: MagpieFeature = {
  name: "usage",
  provides: ["spend"],
  needs: ["notifier"],
  uses: ["memory"],
  setup(config, app) {
    const logger = app.logger.child({ component: "usage" });
    const notifier = app.services.notifier;
    const guard = new SpendGuard({
      db: app.store.db,
      budgets: config.budgets,
      prices: config.llm.prices,
      timeZone: config.timezone,
      logger,
      clock: app.clock,
      events: app.events,
      ...(notifier.configured ? { alert: (alert) => notifier.send({ ...alert, priority: 1 }) } : {}),
    });

    const embedder = app.services.memory?.embedder;
    if (embedder) {
      embedder.onUsage = (usage) => {
        try {
          guard.recordUnscoped(MEMORY, usage);
        } catch (error) {
          logger.error({ err: error }, "usage-record-failed");
        }
      };
    }

    warnUnpricedCaps(config, logger);
    return { spend: guard, commands: [usageCommand(app.store.db, config.timezone, app.clock)] };
  },
  reload(config, app, change) {
    const guard = app.ports.spend();
    // The next LLM call is checked against the new caps and priced with the new prices. Always: the guard must not
    // keep the previous config's sections (test/app/reload-captured.test.ts).
    if (guard instanceof SpendGuard) guard.update({ budgets: config.budgets, prices: config.llm.prices });
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
