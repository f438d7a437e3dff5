import type { Logger } from "pino";
import type { RetentionConfig } from "../config/sections/retention.js";
import type { Clock } from "../core/clock.js";
import type { Db } from "../store/index.js";
import {
  DEFAULT_LIMITS,
  type PruneReport,
  type PruneTarget,
  pruneOnce,
  storeTargets,
} from "../store/retention.js";
import { dayAt } from "../usage/calendar.js";
import { rollUpUsage } from "../usage/usage-rollup.js";
import type { MagpieFeature } from "./feature.js";

const DAY_MS = 86_400_000;
/** When a run left old rows behind (its per-run bound), the next one comes this soon. */
const CATCH_UP_MS = 10 * 60_000;

/** Every table retention prunes: the store's, and the usage ledger (rolled up into daily totals, not lost). */
export function retentionTargets(
  db: Db,
  retention: RetentionConfig,
  timeZone: string,
  clock: Clock,
): PruneTarget[] {
  return [
    ...storeTargets(db, retention),
    {
      key: "auditDays",
      table: "llm_usage",
      days: retention.auditDays,
      // Today's rows stay whatever the days: the daily and per-chat budgets sum them.
      prune: (before, limit) =>
        rollUpUsage(db, Math.min(before, dayAt(clock.now(), timeZone).start), timeZone, limit),
    },
  ];
}

/** Prunes now and then every day; `stop()` cancels the next run. */
export function startRetention(options: {
  targets: PruneTarget[];
  clock: Clock;
  logger: Logger;
  onPruned?: (report: PruneReport) => void;
}): { stop(): void /** The start-up run has finished. */; done: Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const run = async () => {
    if (stopped) return;
    let next = DAY_MS;
    try {
      const report = await pruneOnce(options.targets, options.clock.now(), DEFAULT_LIMITS);
      const total = Object.values(report.deleted).reduce((sum, count) => sum + count, 0);
      if (total > 0) options.logger.info({ deleted: report.deleted, more: report.more }, "retention-pruned");
      if (report.more) next = CATCH_UP_MS;
      options.onPruned?.(report);
    } catch (error) {
      options.logger.error({ err: error }, "retention-failed");
    }
    if (!stopped) {
      timer = setTimeout(() => void run(), next);
      timer.unref();
    }
  };
  // At start-up, but off the start-up path: after the current tick.
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(() => void run().then(resolve), 0);
    timer.unref();
  });
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
    done,
  };
}

/**
 * Retention (DESIGN.md → Configuration): old audit, inbox, outbox and (if set) history rows are deleted at
 * start-up and once a day; unfinished inbox and outbox rows never are.
 */
export const retentionFeature: MagpieFeature = {
  name: "retention",
  setup() {},
  start(config, app) {
    const logger = app.logger.child({ component: "retention" });
    const targets = retentionTargets(app.store.db, config.retention, config.timezone, app.clock);
    const retention = startRetention({ targets, clock: app.clock, logger });
    return { stop: () => retention.stop() };
  },
};
