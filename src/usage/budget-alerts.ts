import type Database from "better-sqlite3";
import type { Db } from "../store/index.js";

/** Marks that a cap's alert went out for a period: one alert per cap and period, across restarts. */
export class BudgetAlerts {
  private readonly insert: Database.Statement;

  constructor(db: Db) {
    this.insert = db.prepare(
      "INSERT OR IGNORE INTO budget_alerts (period_key, cap, alerted_at) VALUES (?, ?, ?)",
    );
  }

  /** True only the first time `cap` is marked for `periodKey`. */
  markFirst(periodKey: string, cap: string, at: number): boolean {
    return this.insert.run(`${cap}@${periodKey}`, cap, at).changes === 1;
  }
}
