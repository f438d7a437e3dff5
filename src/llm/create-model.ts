import type { MagpieConfig } from "../config/schema.js";
import type { ChatModel, CompletionOptions, CompletionRequest, CompletionResult } from "./types.js";

/** True when an LLM is configured (a key, or a base URL for keyless local servers). */
export function isLlmConfigured(config: MagpieConfig): boolean {
  return Boolean(config.llm.apiKey || config.llm.baseUrl);
}

/**
 * The configured OpenAI-compatible model. The `openai` SDK is loaded on the first request, not at start-up,
 * so Magpie is ready sooner on a small box.
 */
export function createChatModel(config: MagpieConfig): ChatModel | null {
  if (!isLlmConfigured(config)) return null;
  let model: Promise<ChatModel> | undefined;
  const load = () => {
    model ??= import("./openai-model.js").then(
      ({ OpenAiChatModel }) =>
        new OpenAiChatModel({
          apiKey: config.llm.apiKey,
          baseUrl: config.llm.baseUrl,
          timeoutMs: config.llm.timeoutMs,
          maxRetries: config.llm.maxRetries,
        }),
    );
    return model;
  };
  return {
    complete: async (request: CompletionRequest, options?: CompletionOptions): Promise<CompletionResult> =>
      (await load()).complete(request, options),
  };
}
