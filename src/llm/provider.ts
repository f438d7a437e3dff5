import type OpenAI from "openai";
import type { MagpieConfig } from "../config/schema.js";
import { createRedactor } from "../log/redact.js";
import { redactTexts, type TextRedactor } from "./redacting-model.js";

/** What one OpenAI-compatible endpoint is reached with: every capability on it shares these. */
export interface EndpointSettings {
  baseUrl?: string;
  apiKey?: string;
  timeoutMs: number;
  maxRetries: number;
}

/** Per-request overrides of the endpoint's timeout and SDK retries (the SDK's own request options). */
export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  maxRetries?: number;
}

/**
 * One endpoint: one lazily built `openai` client from which chat, embeddings, transcription and speech are all
 * taken (like the AI SDK's `createOpenAI(settings)` with `.chat()`, `.embedding()`, `.transcription()`,
 * `.speech()`), sharing base URL, key, timeout, retries and redaction. Chat messages are redacted by the chain's
 * wrapper (`redactingModel`); the other capabilities redact what they send here.
 */
export interface LlmProvider {
  readonly settings: EndpointSettings;
  /** The endpoint's client (the `openai` SDK is imported on the first request, not at start-up). */
  client(): Promise<OpenAI>;
  /** `/embeddings` for `input` (each text redacted first); the raw response, for the caller's schema. */
  embeddings(model: string, input: string[], options?: CallOptions): Promise<unknown>;
  /** `/audio/transcriptions`: the transcript (the file name redacted: it is the sender's text). */
  transcription(model: string, audio: Buffer, fileName: string, mime: string | undefined): Promise<string>;
  /** `/audio/speech` of `input` (redacted), asking for `format`: the audio bytes. */
  speech(model: string, voice: string, input: string, format: "opus"): Promise<Buffer>;
}

/** How many `openai` clients this process built (tests assert one per configured endpoint). */
export const clientConstructions = { count: 0 };

/** The provider of one endpoint (built by `LlmProviders`, one per endpoint). */
export function createEndpoint(settings: EndpointSettings, redactor: TextRedactor): LlmProvider {
  let client: Promise<OpenAI> | undefined;
  const sdk = (): Promise<OpenAI> => {
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
    // A failed load (it should not happen) is tried again next time rather than remembered.
    client.catch(() => {
      client = undefined;
    });
    return client;
  };
  return {
    settings,
    client: sdk,
    async embeddings(model, input, options = {}) {
      return (await sdk()).embeddings.create(
        // "float" explicitly: several compatible servers ignore the SDK's default base64 request.
        { model, input: redactTexts(input, redactor), encoding_format: "float" },
        requestOptions(options),
      );
    },
    async transcription(model, audio, fileName, mime) {
      const [{ toFile }, openai] = await Promise.all([import("openai"), sdk()]);
      const file = await toFile(audio, redactor.redact(fileName), mime ? { type: mime } : undefined);
      const result = await openai.audio.transcriptions.create({ file, model });
      return result.text;
    },
    async speech(model, voice, input, format) {
      const response = await (await sdk()).audio.speech.create({
        model,
        voice,
        input: redactor.redact(input),
        response_format: format,
      });
      return Buffer.from(await response.arrayBuffer());
    },
  };
}

/** The SDK's request options for `options`: only what is set, so the client's own values apply otherwise. */
function requestOptions(options: CallOptions): {
  signal?: AbortSignal;
  timeout?: number;
  maxRetries?: number;
} {
  return {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
    ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
  };
}

/**
 * The providers of one loaded config: one per endpoint `llm` and its fallbacks name (an endpoint is its base URL
 * and key — a fallback on `llm`'s endpoint shares `llm`'s provider). Every capability is taken from here, so the
 * process holds one client per configured endpoint. The `llm` keys are restart-only, so the settings are read
 * once.
 */
export class LlmProviders {
  private readonly byEndpoint = new Map<string, LlmProvider>();

  constructor(
    private readonly config: MagpieConfig,
    readonly redactor: TextRedactor,
  ) {}

  /** The provider serving `endpoint` (`llm`'s timeout and retries): the same instance for the same endpoint. */
  at(endpoint: { baseUrl?: string; apiKey?: string }): LlmProvider {
    const key = JSON.stringify([endpoint.baseUrl ?? null, endpoint.apiKey ?? null]);
    let provider = this.byEndpoint.get(key);
    if (!provider) {
      const { timeoutMs, maxRetries } = this.config.llm;
      provider = createEndpoint(
        { baseUrl: endpoint.baseUrl, apiKey: endpoint.apiKey, timeoutMs, maxRetries },
        this.redactor,
      );
      this.byEndpoint.set(key, provider);
    }
    return provider;
  }

  /** `llm`'s own endpoint: embeddings, transcription and speech are served here. */
  primary(): LlmProvider {
    return this.at(this.config.llm);
  }
}

const registries = new WeakMap<MagpieConfig, LlmProviders>();

/**
 * The providers of this config: the same registry for every caller. The app registers its own first, with its
 * redactor (src/app/app.ts); a caller outside an app (the `magpie memory` CLI, tests) gets one redacting with the
 * secrets the config and the process environment name. Asking again with a different redactor is a wiring error.
 */
export function llmProviders(config: MagpieConfig, redactor?: TextRedactor): LlmProviders {
  let registry = registries.get(config);
  if (registry && redactor && registry.redactor !== redactor) {
    throw new Error("The LLM providers of this config were built with another redactor.");
  }
  if (!registry) {
    registry = new LlmProviders(config, redactor ?? lazyRedactor(() => createRedactor(config, process.env)));
    registries.set(config, registry);
  }
  return registry;
}

/** A redactor built on its first use (building one reads the config's env files and encodes every secret). */
function lazyRedactor(build: () => TextRedactor): TextRedactor {
  let redactor: TextRedactor | undefined;
  return {
    redact(text) {
      redactor ??= build();
      return redactor.redact(text);
    },
  };
}

/** The `llm` endpoint of this (frozen) config: the same instance for every caller. */
export function primaryEndpoint(config: MagpieConfig): LlmProvider {
  return llmProviders(config).primary();
}
