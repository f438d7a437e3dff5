import type OpenAI from "openai";
import { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import { createRedactor } from "../log/redact.js";
import { describeLlmError } from "./errors.js";
import type { CallScope, LlmCallKind, LlmCallPorts, LlmUsage } from "./llm-call.js";
import { redactingModel, redactTexts, type TextRedactor } from "./redacting-model.js";
import { estimateMessageTokens, estimateTokens } from "./tokens.js";
import type { ChatMessage, ChatModel, CompletionResult, RequestMessage } from "./types.js";

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
  /** Who the call is for: its ledger row is filed under it (without one the call is only published). */
  scope?: CallScope;
}

/**
 * One endpoint: one lazily built `openai` client from which chat, embeddings, transcription and speech are all
 * taken (like the AI SDK's `createOpenAI(settings)` with `.chat()`, `.embedding()`, `.transcription()`,
 * `.speech()`), sharing base URL, key, timeout, retries, redaction and the ledger. Chat messages are redacted by
 * `LlmProviders.chat`; the other capabilities redact what they send here. Every call, answered or failed, is
 * accounted for here (`CallMeter`): its ledger row and its one `llmCall` event.
 */
export interface LlmProvider {
  readonly settings: EndpointSettings;
  /** The endpoint's client (the `openai` SDK is imported on the first request, not at start-up). */
  client(): Promise<OpenAI>;
  /** `/embeddings` for `input` (each text redacted first); the raw response, for the caller's schema. */
  embeddings(model: string, input: string[], options?: CallOptions): Promise<unknown>;
  /** `/audio/transcriptions`: the transcript (the file name redacted: it is the sender's text). */
  transcription(
    model: string,
    audio: Buffer,
    fileName: string,
    mime: string | undefined,
    scope?: CallScope,
  ): Promise<string>;
  /** `/audio/speech` of `input` (redacted), asking for `format`: the audio bytes. */
  speech(model: string, voice: string, input: string, format: "opus", scope?: CallScope): Promise<Buffer>;
}

/** How many `openai` clients this process built (tests assert one per configured endpoint). */
export const clientConstructions = { count: 0 };

/** The provider of one endpoint (built by `LlmProviders`, one per endpoint). */
export function createEndpoint(
  settings: EndpointSettings,
  redactor: TextRedactor,
  meter: CallMeter = new CallMeter(),
): LlmProvider {
  let client: Promise<OpenAI> | undefined;
  const sdk = (): Promise<OpenAI> => {
    // The lean fetch (undici) is loaded with the SDK, not at start-up.
    client ??= Promise.all([import("openai"), import("../lib/lean-fetch.js")]).then(
      ([{ default: OpenAIClient }, { leanFetch }]) => {
        clientConstructions.count += 1;
        return new OpenAIClient({
          // Local servers (Ollama, llama.cpp) accept any key; the SDK insists on one.
          apiKey: settings.apiKey ?? "not-needed",
          baseURL: settings.baseUrl,
          timeout: settings.timeoutMs,
          maxRetries: settings.maxRetries,
          // undici's request() under a fetch: 0.3 ms less per LLM round trip than global fetch (src/lib/lean-fetch.ts).
          fetch: leanFetch(),
        });
      },
    );
    // A failed load (it should not happen) is tried again next time rather than remembered.
    client.catch(() => {
      client = undefined;
    });
    return client;
  };
  return {
    settings,
    client: sdk,
    embeddings(model, input, options = {}) {
      return meter.measure({ kind: "embedding", model, settings, signal: options.signal }, options.scope, {
        run: async () =>
          (await sdk()).embeddings.create(
            // "float" explicitly: several compatible servers ignore the SDK's default base64 request.
            { model, input: redactTexts(input, redactor), encoding_format: "float" },
            requestOptions(options),
          ),
        usage: (response) => {
          const promptTokens = embeddingUsage.safeParse(response).data?.usage?.prompt_tokens;
          return {
            promptTokens: promptTokens ?? input.reduce((sum, text) => sum + estimateTokens(text), 0),
            completionTokens: 0,
            estimated: promptTokens === undefined,
          };
        },
      });
    },
    transcription(model, audio, fileName, mime, scope) {
      return meter.measure({ kind: "transcription", model, settings }, scope, {
        run: async () => {
          const [{ toFile }, openai] = await Promise.all([import("openai"), sdk()]);
          const file = await toFile(audio, redactor.redact(fileName), mime ? { type: mime } : undefined);
          const result = await openai.audio.transcriptions.create({ file, model });
          return result.text;
        },
        usage: (text) => ({ promptTokens: 0, completionTokens: estimateTokens(text), estimated: true }),
      });
    },
    speech(model, voice, input, format, scope) {
      // Billed by its input: a failed request may still have been billed, so it is kept in the ledger too.
      const usage = { promptTokens: estimateTokens(input), completionTokens: 0, estimated: true };
      return meter.measure({ kind: "speech", model, settings }, scope, {
        run: async () => {
          const response = await (await sdk()).audio.speech.create({
            model,
            voice,
            input: redactor.redact(input),
            response_format: format,
          });
          return Buffer.from(await response.arrayBuffer());
        },
        usage: () => usage,
        billedOnFailure: usage,
      });
    },
  };
}

/** The `usage` an embeddings response may carry (servers that send none are estimated). */
const embeddingUsage = z.looseObject({
  usage: z.looseObject({ prompt_tokens: z.number().int().min(0) }).optional(),
});

/** One call as the meter sees it: its kind and model, the endpoint's settings, the caller's signal. */
interface MeteredCall {
  kind: LlmCallKind;
  model: string;
  settings: Pick<EndpointSettings, "baseUrl" | "timeoutMs">;
  signal?: AbortSignal | undefined;
}

/** The tokens a call used: the server's count, or an estimate marked as one. */
type Used = Pick<LlmUsage, "promptTokens" | "completionTokens" | "estimated"> &
  Partial<Pick<LlmUsage, "model" | "fallback">>;

/**
 * THE place an LLM call is accounted for (like the Agents SDK's `withGenerationSpan`): each call of every kind —
 * chat, embedding, transcription, speech — writes its ledger row (answered and for someone) and publishes exactly
 * one `llmCall` event, answered or failed. A call the caller stopped (its signal aborted) publishes nothing: no one
 * waits for it and it is no failure of the model. A failing ledger is logged; the call's answer still goes back.
 */
export class CallMeter {
  constructor(private readonly ports: LlmCallPorts = {}) {}

  async measure<T>(
    call: MeteredCall,
    scope: CallScope | undefined,
    how: { run: () => Promise<T>; usage: (result: T) => Used; billedOnFailure?: Used },
  ): Promise<T> {
    const started = performance.now();
    let result: T;
    try {
      result = await how.run();
    } catch (error) {
      if (!call.signal?.aborted) this.failed(call, scope, started, error, how.billedOnFailure);
      throw error;
    }
    this.settle(call, scope, started, "ok", how.usage(result));
    return result;
  }

  private failed(
    call: MeteredCall,
    scope: CallScope | undefined,
    started: number,
    error: unknown,
    billed: Used | undefined,
  ): void {
    const { code } = describeLlmError(error, { ...call.settings, model: call.model });
    const used = billed ?? { promptTokens: 0, completionTokens: 0, estimated: false };
    this.settle(call, scope, started, "error", used, code, billed !== undefined);
  }

  private settle(
    call: MeteredCall,
    scope: CallScope | undefined,
    started: number,
    result: "ok" | "error",
    used: Used,
    errorCode?: string,
    billed = result === "ok",
  ): void {
    const latencyMs = Math.round(performance.now() - started);
    const usage: LlmUsage = { kind: call.kind, model: call.model, ...used, latencyMs };
    let costUsd: number | null = null;
    if (scope && billed && this.ports.ledger) {
      try {
        costUsd = this.ports.ledger.record(scope, usage);
      } catch (error) {
        this.ports.logger?.error({ err: error, session: scope.sessionKey }, "usage-record-failed");
      }
    }
    this.ports.events?.llmCall({
      ...(scope?.turnId ? { turnId: scope.turnId } : {}),
      origin: scope?.origin ?? "unknown",
      ...(scope ? { sessionKey: scope.sessionKey } : {}),
      kind: usage.kind,
      model: usage.model,
      result,
      ...(usage.fallback ? { fallback: true } : {}),
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      estimated: usage.estimated,
      ...(costUsd !== null ? { costUsd } : {}),
      latencyMs,
      ...(errorCode ? { errorCode } : {}),
    });
  }

  /**
   * A chat model whose every `complete` is accounted for: one call of the chain (its retries and fallbacks
   * included) is one call, filed under the model that answered.
   */
  chat(model: ChatModel, settings: MeteredCall["settings"]): ChatModel {
    return {
      complete: (request, options = {}) =>
        this.measure(
          { kind: "chat", model: request.model, settings, signal: options.signal },
          options.scope,
          {
            run: () => model.complete(request, options),
            usage: (result) => chatUsage(request.messages, result),
          },
        ),
      ...(model.warm ? { warm: () => model.warm!() } : {}),
    };
  }
}

/** What a chat call used: the server's `usage`, or an estimate of the request and the answer marked as one. */
function chatUsage(messages: RequestMessage[], result: CompletionResult): Used {
  const answeredBy = {
    ...(result.answeredBy ? { model: result.answeredBy.model } : {}),
    ...(result.answeredBy?.fallback ? { fallback: true } : {}),
  };
  if (result.usage) return { ...answeredBy, ...result.usage, estimated: false };
  return {
    ...answeredBy,
    promptTokens: messages.reduce((sum, message) => sum + estimateMessageTokens(textOf(message)), 0),
    completionTokens: estimateMessageTokens({
      role: "assistant",
      content: result.content,
      tool_calls: result.toolCalls,
    }),
    estimated: true,
  };
}

/** A request message as text for the estimate: an image part counts as "[image]". */
function textOf(message: RequestMessage): ChatMessage {
  if (!Array.isArray(message.content)) return message as ChatMessage;
  const text = message.content.map((part) => (part.type === "text" ? part.text : "[image]")).join(" ");
  return { role: "user", content: text };
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
 * once. The ledger and the event publisher are handed in here, at construction: every capability of every
 * endpoint accounts for its calls through them (`CallMeter`).
 */
export class LlmProviders {
  private readonly byEndpoint = new Map<string, LlmProvider>();
  private readonly meter: CallMeter;

  constructor(
    private readonly config: MagpieConfig,
    readonly redactor: TextRedactor,
    readonly ports: LlmCallPorts = {},
  ) {
    this.meter = new CallMeter(ports);
  }

  /**
   * The chat model callers use: `chain` (the configured model chain, or a test's model) with every message
   * redacted and every call accounted for. Pass `options.scope` to `complete` to file it in the ledger.
   */
  chat(chain: ChatModel): ChatModel {
    const { baseUrl, timeoutMs } = this.config.llm;
    return this.meter.chat(redactingModel(chain, this.redactor), { baseUrl, timeoutMs });
  }

  /** The provider serving `endpoint` (`llm`'s timeout and retries): the same instance for the same endpoint. */
  at(endpoint: { baseUrl?: string; apiKey?: string }): LlmProvider {
    const key = JSON.stringify([endpoint.baseUrl ?? null, endpoint.apiKey ?? null]);
    let provider = this.byEndpoint.get(key);
    if (!provider) {
      const { timeoutMs, maxRetries } = this.config.llm;
      provider = createEndpoint(
        { baseUrl: endpoint.baseUrl, apiKey: endpoint.apiKey, timeoutMs, maxRetries },
        this.redactor,
        this.meter,
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
 * redactor, ledger and event publisher (src/app/base-parts.ts); a caller outside an app (the `magpie memory` CLI,
 * tests) gets one redacting with the secrets the config and the process environment name, keeping no ledger.
 * Asking again with a different redactor or ports is a wiring error.
 */
export function llmProviders(
  config: MagpieConfig,
  redactor?: TextRedactor,
  ports?: LlmCallPorts,
): LlmProviders {
  let registry = registries.get(config);
  if (registry && ((redactor && registry.redactor !== redactor) || (ports && registry.ports !== ports))) {
    throw new Error("The LLM providers of this config were built with another redactor or ledger.");
  }
  if (!registry) {
    const redacting = redactor ?? lazyRedactor(() => createRedactor(config, process.env));
    registry = new LlmProviders(config, redacting, ports);
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
