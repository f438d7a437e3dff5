import { z } from "zod";
import { type LlmCallEvent, magpieEvents } from "../../core/events.js";
import { row } from "../../lib/row.js";
import type { Db } from "../../store/database.js";

const lastCallRow = row(z.object({ model: z.string(), at: z.number() }), "home-model");

/** The configured chain: `llm.model`, then `llm.fallbacks` in order (null: no LLM, slash commands only). */
export interface ModelChainConfig {
  primary: string;
  fallbacks: string[];
}

/** What the home page says about the model chain. */
export interface ModelChainState {
  chain: ModelChainConfig | null;
  /**
   * The last chat call's result: `primary` (answered by the requested model), `fallback` (a fallback answered:
   * the primary is failing), `failed` (every model of the chain failed), or null when none was made yet.
   */
  last: {
    result: "primary" | "fallback" | "failed";
    model: string;
    at: number;
    errorCode?: string;
  } | null;
}

/**
 * Follows the model chain's state from the core's `llmCall` events (chat calls only): whether the last answer came
 * from the primary or a fallback, or every model failed. Before the first call since start-up, the ledger's last
 * chat call tells which model answered last.
 */
export class ModelChainWatch {
  private last: ModelChainState["last"] = null;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly chain: () => ModelChainConfig | null,
    private readonly db: Db,
    app: string,
  ) {
    this.unsubscribe = magpieEvents.llmCall.subscribe(app, (event) => this.see(event));
  }

  private see(event: LlmCallEvent): void {
    if (event.kind !== "chat") return;
    this.last = {
      result: event.result === "error" ? "failed" : event.fallback ? "fallback" : "primary",
      model: event.model,
      at: event.at,
      ...(event.errorCode ? { errorCode: event.errorCode } : {}),
    };
  }

  state(): ModelChainState {
    return { chain: this.chain(), last: this.last ?? this.fromLedger() };
  }

  private fromLedger(): ModelChainState["last"] {
    const row = lastCallRow.one(
      this.db.prepare("SELECT model, at FROM llm_usage WHERE kind = 'chat' ORDER BY at DESC LIMIT 1").get(),
    );
    if (!row) return null;
    const fallback = this.chain()?.fallbacks.includes(row.model) ?? false;
    return { result: fallback ? "fallback" : "primary", model: row.model, at: row.at };
  }

  stop(): void {
    this.unsubscribe();
  }
}
