import { z } from "zod";
import type { LlmUsage } from "../core/spend.js";
import { MagpieError } from "../lib/errors.js";
import type { LlmProvider } from "../llm/provider.js";
import { estimateTokens } from "../llm/tokens.js";
import { normalize } from "./vector-math.js";

/** Turns texts into unit-length vectors. `model` tags stored vectors so a model change is detected. */
export interface Embedder {
  readonly model: string;
  /**
   * One unit vector per text, in order. `interactive` calls have someone waiting (a turn, a tool call):
   * they give up sooner and don't retry; what they miss is embedded later in the background.
   */
  embed(texts: string[], options?: { interactive?: boolean; signal?: AbortSignal }): Promise<Float32Array[]>;
  /** Told what each embeddings request used, for the usage ledger (set by the usage feature). */
  onUsage?: (usage: LlmUsage) => void;
}

export interface OpenAiEmbedderOptions {
  model: string;
  /** The endpoint's provider (`llm`'s): its client, timeout, retries and redaction. */
  provider: LlmProvider;
  /** Texts per request. */
  batchSize?: number;
  onUsage?: (usage: LlmUsage) => void;
}

const embeddingResponseSchema = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()) })),
  usage: z.object({ prompt_tokens: z.number().int().min(0) }).optional(),
});

/** Someone is waiting: don't let a slow endpoint hold a turn for the full LLM timeout. */
const INTERACTIVE_TIMEOUT_MS = 10_000;

/**
 * Embeddings through any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, llama.cpp, vLLM …), taken from
 * the endpoint's provider: its client (the SDK loads on the first request), settings and redaction.
 */
export class OpenAiEmbedder implements Embedder {
  readonly model: string;
  onUsage?: (usage: LlmUsage) => void;
  private readonly batchSize: number;

  constructor(private readonly options: OpenAiEmbedderOptions) {
    this.model = options.model;
    this.batchSize = options.batchSize ?? 64;
    this.onUsage = options.onUsage;
  }

  async embed(
    texts: string[],
    options: { interactive?: boolean; signal?: AbortSignal } = {},
  ): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    const { provider } = this.options;
    const requestOptions = options.interactive
      ? {
          signal: options.signal,
          timeoutMs: Math.min(INTERACTIVE_TIMEOUT_MS, provider.settings.timeoutMs),
          maxRetries: 0,
        }
      : { signal: options.signal };
    for (let start = 0; start < texts.length; start += this.batchSize) {
      const batch = texts.slice(start, start + this.batchSize);
      const response = await provider.embeddings(this.model, batch, requestOptions);
      const parsed = embeddingResponseSchema.safeParse(response);
      if (!parsed.success || parsed.data.data.length !== batch.length) {
        throw new MagpieError(
          "memory.embedding_response",
          `The embeddings endpoint returned an unexpected response for model "${this.model}". Check llm.embeddingModel and llm.baseUrl.`,
        );
      }
      this.reportUsage(batch, parsed.data.usage?.prompt_tokens);
      const ordered = [...parsed.data.data].sort((a, b) => a.index - b.index);
      for (const item of ordered) vectors.push(normalize(item.embedding));
    }
    return vectors;
  }

  /** The provider's count, or an estimate marked as one; a failing listener never fails the embedding. */
  private reportUsage(batch: string[], promptTokens: number | undefined): void {
    if (!this.onUsage) return;
    try {
      this.onUsage({
        kind: "embedding",
        model: this.model,
        promptTokens: promptTokens ?? batch.reduce((sum, text) => sum + estimateTokens(text), 0),
        completionTokens: 0,
        estimated: promptTokens === undefined,
      });
    } catch {
      // The ledger logs its own failures; memory keeps working.
    }
  }
}
