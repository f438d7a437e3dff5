import type { MagpieConfig } from "../config/schema.js";
import { type ChainEntry, chainEntries } from "./chain-entries.js";
import { type ChainEvent, ModelChain } from "./model-chain.js";
import { type LlmProviders, llmProviders } from "./provider.js";
import type { ChatModel } from "./types.js";

/** True when an LLM is configured (a key, or a base URL for keyless local servers). */
export function isLlmConfigured(config: MagpieConfig): boolean {
  return Boolean(config.llm.apiKey || config.llm.baseUrl);
}

/** The one logger method the chain reports retries, failovers and cooldowns through. */
interface WarnLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface ChatModelDeps {
  /** Clock for cooldowns (ms). */
  now?: () => number;
  /** Back-off wait; tests pass a fast one. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  logger?: WarnLogger;
  onEvent?: (event: ChainEvent) => void;
  /** The config's endpoint providers (default: `llmProviders(config)`, the app's once it registered them). */
  providers?: LlmProviders;
}

/**
 * The configured model chain (the request's model, then `llm.fallbacks`) over OpenAI-compatible endpoints.
 * The `openai` SDK is loaded on the first request, not at start-up, so Magpie is ready sooner on a small box.
 */
export function createChatModel(config: MagpieConfig, deps: ChatModelDeps = {}): ChatModel | null {
  if (!isLlmConfigured(config)) return null;
  const providers = deps.providers ?? llmProviders(config);
  // Each entry's chat is taken from its endpoint's provider: a fallback on `llm`'s endpoint shares its client.
  const connect = async (entry: ChainEntry): Promise<ChatModel> => {
    const [{ OpenAiChatModel }, client] = await Promise.all([
      import("./openai-model.js"),
      providers.at(entry).client(),
    ]);
    return new OpenAiChatModel(client);
  };
  return new ModelChain({
    entries: chainEntries(config),
    // llm.model first: the primary's own model when a chat's /model choice names a fallback.
    primaryModels: [
      config.llm.model,
      ...Object.values(config.agents ?? {}).flatMap((agent) => (agent?.model ? [agent.model] : [])),
    ],
    connect,
    maxRetries: config.llm.maxRetries,
    cooldownMs: config.llm.cooldownSecs * 1000,
    now: deps.now,
    sleep: deps.sleep,
    onEvent: (event) => {
      deps.onEvent?.(event);
      if (deps.logger) logChainEvent(deps.logger, event);
    },
  });
}

/** Retries, failovers and cooldowns as warnings (`llm-retry`, `llm-failover`, `llm-cooldown`). */
function logChainEvent(logger: WarnLogger, event: ChainEvent): void {
  const { type, ...fields } = event;
  if ("error" in fields) {
    const { error, ...rest } = fields;
    logger.warn({ ...rest, err: error }, `llm-${type}`);
  } else logger.warn(fields, `llm-${type}`);
}
