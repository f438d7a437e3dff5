import type { Logger } from "pino";
import { type Clock, systemClock } from "../core/clock.js";
import { type EventPublisher, NO_EVENTS } from "../core/events.js";
import type { LlmUsage, SpendDecision, SpendPort, SpendScope } from "../core/spend.js";
import type { Db } from "../store/index.js";
import { BudgetAlerts } from "./budget-alerts.js";
import { alertMessage, capKey, type ReachedCap, refusalMessage } from "./budget-message.js";
import { type Budgets, type CallKeys, DayCache, type Period, periodsOf } from "./budget-periods.js";
import { type Spent, UsageLedger } from "./ledger.js";
import { originIds } from "./origin-keys.js";
import { costOf, type PriceList } from "./prices.js";

export interface SpendGuardOptions {
  db: Db;
  budgets: Budgets;
  prices: PriceList;
  timeZone: string;
  logger: Logger;
  clock?: Clock;
  /** Every call written to the ledger is published as an `llmCall` event (default: publishes nothing). */
  events?: EventPublisher;
  /** Tells the owner a cap was reached (Pushover); without it the alert is only logged. */
  alert?: (alert: { title: string; message: string }) => Promise<unknown>;
}

/** Where an unscoped call (an embedding for memory) is filed. */
export interface UnscopedOrigin {
  origin: string;
  sessionKey: string;
}

const ALLOWED: SpendDecision = { allowed: true };
/** Period sums kept in memory; past this many (old turns, old days) the cache starts over from the ledger. */
const CACHE_LIMIT = 2_000;

/**
 * The usage ledger and the hard budgets behind the turn engine's `SpendPort`. Before a call, every configured
 * cap the call counts against is checked (a call at or past one is not made); after it, the call is written to
 * the ledger. Period sums come from the ledger once and are then kept up to date in memory, so the check costs
 * no query on most calls.
 */
export class SpendGuard implements SpendPort {
  readonly ledger: UsageLedger;
  private readonly alerts: BudgetAlerts;
  private readonly days: DayCache;
  private readonly clock: Clock;
  private readonly spent = new Map<string, Spent>();

  constructor(private readonly options: SpendGuardOptions) {
    this.ledger = new UsageLedger(options.db);
    this.alerts = new BudgetAlerts(options.db);
    this.days = new DayCache(options.timeZone);
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Takes over new caps and prices (a config reload): the next call is checked against them. Sums already spent
   * stay (they come from the ledger); a cap lowered below them refuses the next call.
   */
  update(settings: { budgets: Budgets; prices: PriceList }): void {
    this.options.budgets = settings.budgets;
    this.options.prices = settings.prices;
  }

  beforeCall(scope: SpendScope): SpendDecision {
    const now = this.clock.now();
    try {
      for (const period of this.periodsFor(keysOf(scope), now)) {
        const reached = this.reachedIn(period);
        if (!reached) continue;
        this.alertOnce(reached, now);
        return { allowed: false, message: refusalMessage(reached, now, this.options.timeZone) };
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

  record(scope: SpendScope, usage: LlmUsage): void {
    this.write(
      {
        origin: scope.origin,
        sessionKey: scope.sessionKey,
        historyKey: scope.historyKey,
        turnId: scope.turnId,
      },
      scope.agent,
      usage,
    );
  }

  /**
   * A call outside any turn (memory's embeddings): in the ledger and the daily totals, never refused —
   * memory writes and searches keep working when a cap is reached.
   */
  recordUnscoped(where: UnscopedOrigin, usage: LlmUsage): void {
    this.write({ ...where, historyKey: where.sessionKey, turnId: null }, null, usage);
  }

  private write(
    where: { origin: string; sessionKey: string; historyKey: string; turnId: string | null },
    agent: string | null,
    usage: LlmUsage,
  ): void {
    const now = this.clock.now();
    const ids = originIds(where.historyKey, where.sessionKey);
    const costUsd = costOf(this.options.prices, usage.model, usage.promptTokens, usage.completionTokens);
    this.ledger.insert({
      at: now,
      ...where,
      ...ids,
      agent,
      kind: usage.kind,
      model: usage.model,
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      estimated: usage.estimated,
      costUsd,
    });
    (this.options.events ?? NO_EVENTS).llmCall({
      ...(where.turnId ? { turnId: where.turnId } : {}),
      origin: where.origin,
      sessionKey: where.sessionKey,
      kind: usage.kind,
      model: usage.model,
      result: "ok",
      ...(usage.fallback ? { fallback: true } : {}),
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      estimated: usage.estimated,
      ...(costUsd !== null ? { costUsd } : {}),
      latencyMs: usage.latencyMs ?? 0,
      at: now,
    });
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
  }

  private periodsFor(keys: CallKeys, now: number): Period[] {
    return periodsOf(this.options.budgets, keys, this.days.at(now), this.ledger);
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
    const alert = alertMessage(reached, now, this.options.timeZone);
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
