import type OpenAI from "openai";
import type { MagpieConfig } from "../config/schema.js";

/** What one OpenAI-compatible endpoint is reached with: every capability on it shares these. */
export interface EndpointSettings {
  baseUrl?: string;
  apiKey?: string;
  timeoutMs: number;
  maxRetries: number;
}

/**
 * One endpoint's client, shared by chat, embeddings, transcription and speech (like the AI SDK's
 * `createOpenAI(settings)`). The `openai` SDK is imported on the first request, not at start-up.
 */
export interface LlmEndpoint {
  readonly settings: EndpointSettings;
  client(): Promise<OpenAI>;
}

/** How many `openai` clients this process built (tests assert one per configured endpoint). */
export const clientConstructions = { count: 0 };

export function createEndpoint(settings: EndpointSettings): LlmEndpoint {
  let client: Promise<OpenAI> | undefined;
  return {
    settings,
    client: () => {
      client ??= import("openai").then(({ default: OpenAIClient }) => {
        clientConstructions.count += 1;
        return new OpenAIClient({
          // Local servers (Ollama, llama.cpp) accept any key; the SDK insists on one.
          apiKey: settings.apiKey ?? "not-needed",
          baseURL: settings.baseUrl,
          timeout: settings.timeoutMs,
          maxRetries: settings.maxRetries,
        });
      });
      return client;
    },
  };
}

const primaries = new WeakMap<MagpieConfig, LlmEndpoint>();

/** The `llm` endpoint of this (frozen) config: the same instance for every caller. */
export function primaryEndpoint(config: MagpieConfig): LlmEndpoint {
  let endpoint = primaries.get(config);
  if (!endpoint) {
    endpoint = createEndpoint({
      baseUrl: config.llm.baseUrl,
      apiKey: config.llm.apiKey,
      timeoutMs: config.llm.timeoutMs,
      maxRetries: config.llm.maxRetries,
    });
    primaries.set(config, endpoint);
  }
  return endpoint;
}
