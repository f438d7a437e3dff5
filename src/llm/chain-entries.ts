import type { MagpieConfig } from "../config/schema.js";

/** One model of the chain: where it is served and with which key. */
export interface ChainEntry {
  /** A fixed model (fallbacks), or null for the primary: the model the request asks for. */
  model: string | null;
  baseUrl?: string;
  apiKey?: string;
  /** Where the entry is configured, for messages: "llm" or "llm.fallbacks[0]". */
  configPath: string;
  /** The config keys to check when this entry's key is rejected. */
  keyHint: string;
  /** The config keys to check when this entry's model is not found. */
  modelHint: string;
}

/** The model chain: the request's model at llm.baseUrl/llm.apiKey, then each of `llm.fallbacks` in order. */
export function chainEntries(config: MagpieConfig): ChainEntry[] {
  const { llm } = config;
  const primary: ChainEntry = {
    model: null,
    baseUrl: llm.baseUrl,
    apiKey: llm.apiKey,
    configPath: "llm",
    keyHint: "OPENAI_API_KEY or llm.apiKey",
    modelHint: "MAGPIE_MODEL or llm.model",
  };
  return [
    primary,
    ...llm.fallbacks.map((fallback, index): ChainEntry => {
      const path = `llm.fallbacks[${index}]`;
      return {
        model: fallback.model,
        baseUrl: fallback.baseUrl ?? llm.baseUrl,
        apiKey: fallback.apiKey ?? llm.apiKey,
        configPath: path,
        keyHint: fallback.apiKey
          ? `${path}.apiKey`
          : `${path}.apiKey (it uses OPENAI_API_KEY / llm.apiKey now)`,
        modelHint: `${path}.model`,
      };
    }),
  ];
}

/** The endpoint URL an entry talks to (the SDK's default when none is configured). */
export function entryBaseUrl(entry: { baseUrl?: string }): string {
  return (entry.baseUrl ?? "https://api.openai.com/v1").replace(/\/$/, "");
}
