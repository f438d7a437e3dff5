import type { Logger } from "pino";
import { type Clock, systemClock } from "../core/clock.js";
import type { SpendDecision, SpendPort, SpendScope } from "../core/spend.js";
import type { CallScope, LlmLedgerPort, LlmUsage } from "../llm/llm-call.js";
import type { Db } from "../store/index.js";
import { BudgetAlerts } from "./budget-alerts.js";
import { alertMessage, capKey, type ReachedCap, refusalMessage } from "./budget-message.js";
import { type Budgets, type CallKeys, DayCache, type Period, periodsOf } from "./budget-periods.js";
import { type Spent, UsageLedger } from "./ledger.js";
import { originIds } from "./origin-keys.js";
import { costOf, type PriceList } from "./prices.js";

/** The settings the guard reads at each call: the app's live config (a reload's caps and prices apply at once). */
export interface SpendSettings {
  readonly budgets: Budgets;
  readonly llm: { readonly prices: PriceList };
  readonly timezone: string;
}

export interface SpendGuardOptions {
  db: Db;
  settings: SpendSettings;
  logger: Logger;
  clock?: Clock;
  /** Tells the owner a cap was reached (Pushover); without it the alert is only logged. */
  alert?: (alert: { title: string; message: string }) => Promise<unknown>;
}

const ALLOWED: SpendDecision = { allowed: true };
/** Period sums kept in memory; past this many (old turns, old days) the cache starts over from the ledger. */
const CACHE_LIMIT = 2_000;

/**
 * The usage ledger and the hard budgets behind the turn engine's `SpendPort`. Before a call, every configured
 * cap the call counts against is checked (a call at or past one is not made); after it, the LLM provider writes
 * the call to the ledger through `record` (the provider's `LlmLedgerPort`). Period sums come from the ledger once
 * and are then kept up to date in memory, so the check costs no query on most calls.
 */
export class SpendGuard implements SpendPort, LlmLedgerPort {
  readonly ledger: UsageLedger;
  private readonly alerts: BudgetAlerts;
  private readonly days: DayCache;
  private readonly clock: Clock;
  private readonly spent = new Map<string, Spent>();

  constructor(private readonly options: SpendGuardOptions) {
    this.ledger = new UsageLedger(options.db);
    this.alerts = new BudgetAlerts(options.db);
    this.days = new DayCache(options.settings.timezone);
    this.clock = options.clock ?? systemClock;
  }

  beforeCall(scope: SpendScope): SpendDecision {
    const now = this.clock.now();
    try {
      for (const period of this.periodsFor(keysOf(scope), now)) {
        const reached = this.reachedIn(period);
        if (!reached) continue;
        this.alertOnce(reached, now);
        return { allowed: false, message: refusalMessage(reached, now, this.options.settings.timezone) };
      }
      return ALLOWED;
    } catch (error) {
      // A hard cap that can't be read stays closed: no call is made on a guess.
      this.options.logger.error({ err: error, session: scope.sessionKey }, "budget-check-failed");
      return {
        allowed: false,
        message: "I couldn't check the spending budgets (the usage ledger failed), so I made no LLM call.",
      };
    }
  }

  /**
   * Writes one call to the ledger and the in-memory sums; returns its cost (null when its model has no price).
   * A call outside any turn (memory's embeddings, `turnId` null) counts in the daily totals and is never
   * refused — memory writes and searches keep working when a cap is reached.
   */
  record(scope: CallScope, usage: LlmUsage): number | null {
    const now = this.clock.now();
    const where = {
      origin: scope.origin,
      sessionKey: scope.sessionKey,
      historyKey: scope.historyKey,
      turnId: scope.turnId,
    };
    const ids = originIds(where.historyKey, where.sessionKey);
    const prices = this.options.settings.llm.prices;
    const costUsd = costOf(prices, usage.model, usage.promptTokens, usage.completionTokens);
    // Written with the step's journal row (one commit, issue 35); a failed write is logged, as before.
    this.ledger.queue(
      {
        at: now,
        ...where,
        ...ids,
        agent: scope.agent,
        kind: usage.kind,
        model: usage.model,
        promptTokens: usage.promptTokens,
        completionTokens: usage.completionTokens,
        estimated: usage.estimated,
        costUsd,
      },
      (error) => this.options.logger.error({ err: error, session: scope.sessionKey }, "usage-record-failed"),
    );
    const tokens =
      Math.max(0, Math.round(usage.promptTokens)) + Math.max(0, Math.round(usage.completionTokens));
    for (const period of this.periodsFor(
      { ...ids, sessionKey: where.sessionKey, turnId: where.turnId },
      now,
    )) {
      const cached = this.spent.get(period.key);
      if (cached) {
        cached.tokens += tokens;
        cached.usd += costUsd ?? 0;
      }
      // The alert goes out when a cap is reached, not only when the next call is refused.
      const reached = this.reachedIn(period);
      if (reached) this.alertOnce(reached, now);
    }
    return costUsd;
  }

  private periodsFor(keys: CallKeys, now: number): Period[] {
    return periodsOf(this.options.settings.budgets, keys, this.days.at(now), this.ledger);
  }

  private spentIn(period: Period): Spent {
    let spent = this.spent.get(period.key);
    if (!spent) {
      if (this.spent.size >= CACHE_LIMIT) this.spent.clear();
      const loaded = period.load();
      spent = { tokens: loaded.tokens, usd: loaded.usd };
      this.spent.set(period.key, spent);
    }
    return spent;
  }

  private reachedIn(period: Period): ReachedCap | null {
    const spent = this.spentIn(period);
    const { tokens, usd } = period.limit;
    if (tokens !== undefined && spent.tokens >= tokens) {
      return { period, unit: "tokens", limit: tokens, used: spent.tokens };
    }
    if (usd !== undefined && spent.usd >= usd) return { period, unit: "usd", limit: usd, used: spent.usd };
    return null;
  }

  private alertOnce(reached: ReachedCap, now: number): void {
    const cap = capKey(reached);
    if (!this.alerts.markFirst(reached.period.key, cap, now)) return;
    const alert = alertMessage(reached, now, this.options.settings.timezone);
    this.options.logger.warn({ cap, period: reached.period.key, used: reached.used }, "budget-reached");
    this.options.alert?.(alert).catch((error: unknown) => {
      this.options.logger.warn({ err: error, cap }, "budget-alert-failed");
    });
  }
}

function keysOf(scope: SpendScope): CallKeys {
  return {
    ...originIds(scope.historyKey, scope.sessionKey),
    sessionKey: scope.sessionKey,
    turnId: scope.turnId,
  };
}
