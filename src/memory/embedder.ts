import { z } from "zod";
import { MagpieError } from "../lib/errors.js";
import type { CallScope } from "../llm/llm-call.js";
import type { LlmProvider } from "../llm/provider.js";
import { normalize } from "./vector-math.js";

/** Turns texts into unit-length vectors. `model` tags stored vectors so a model change is detected. */
export interface Embedder {
  readonly model: string;
  /**
   * One unit vector per text, in order. `interactive` calls have someone waiting (a turn, a tool call):
   * they give up sooner and don't retry; what they miss is embedded later in the background.
   */
  embed(texts: string[], options?: { interactive?: boolean; signal?: AbortSignal }): Promise<Float32Array[]>;
}

export interface OpenAiEmbedderOptions {
  model: string;
  /** The endpoint's provider (`llm`'s): its client, timeout, retries and redaction. */
  provider: LlmProvider;
  /** Texts per request. */
  batchSize?: number;
}

/** Where memory's embeddings are filed in the usage ledger: no turn, no chat — memory's own line. */
export const MEMORY_SCOPE: CallScope = {
  origin: "memory",
  sessionKey: "memory",
  historyKey: "memory",
  turnId: null,
  agent: null,
};

const embeddingResponseSchema = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()) })),
});

/** Someone is waiting: don't let a slow endpoint hold a turn for the full LLM timeout. */
const INTERACTIVE_TIMEOUT_MS = 10_000;

/**
 * Embeddings through any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, llama.cpp, vLLM …), taken from
 * the endpoint's provider: its client (the SDK loads on the first request), settings, redaction and ledger (each
 * request is filed under `MEMORY_SCOPE`).
 */
export class OpenAiEmbedder implements Embedder {
  readonly model: string;
  private readonly batchSize: number;

  constructor(private readonly options: OpenAiEmbedderOptions) {
    this.model = options.model;
    this.batchSize = options.batchSize ?? 64;
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
          scope: MEMORY_SCOPE,
        }
      : { signal: options.signal, scope: MEMORY_SCOPE };
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
      const ordered = [...parsed.data.data].sort((a, b) => a.index - b.index);
      for (const item of ordered) vectors.push(normalize(item.embedding));
    }
    return vectors;
  }
}
