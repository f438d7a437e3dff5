import OpenAI from "openai";
import { z } from "zod";
import { MagpieError } from "../core/errors.js";
import { normalize } from "./vector-math.js";

/** Turns texts into unit-length vectors. `model` tags stored vectors so a model change is detected. */
export interface Embedder {
  readonly model: string;
  /** One vector per text, in order. `purpose: "query"` calls are latency-sensitive (before a turn). */
  embed(
    texts: string[],
    options?: { purpose?: "document" | "query"; signal?: AbortSignal },
  ): Promise<Float32Array[]>;
}

export interface OpenAiEmbedderOptions {
  model: string;
  baseUrl?: string;
  apiKey?: string;
  timeoutMs: number;
  maxRetries: number;
  /** Texts per request. */
  batchSize?: number;
}

const embeddingResponseSchema = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()) })),
});

/** A query is embedded before every turn: don't let a slow endpoint hold the turn for the full LLM timeout. */
const QUERY_TIMEOUT_MS = 10_000;

/** Embeddings through any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, llama.cpp, vLLM …). */
export class OpenAiEmbedder implements Embedder {
  readonly model: string;
  private readonly client: OpenAI;
  private readonly batchSize: number;

  constructor(private readonly options: OpenAiEmbedderOptions) {
    this.model = options.model;
    this.batchSize = options.batchSize ?? 64;
    this.client = new OpenAI({
      // Local servers accept any key; the SDK insists on one.
      apiKey: options.apiKey ?? "not-needed",
      baseURL: options.baseUrl,
      timeout: options.timeoutMs,
      maxRetries: options.maxRetries,
    });
  }

  async embed(
    texts: string[],
    options: { purpose?: "document" | "query"; signal?: AbortSignal } = {},
  ): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    const requestOptions =
      options.purpose === "query"
        ? {
            signal: options.signal,
            timeout: Math.min(QUERY_TIMEOUT_MS, this.options.timeoutMs),
            maxRetries: 0,
          }
        : { signal: options.signal };
    for (let start = 0; start < texts.length; start += this.batchSize) {
      const batch = texts.slice(start, start + this.batchSize);
      const response = await this.client.embeddings.create(
        // "float" explicitly: several compatible servers ignore the SDK's default base64 request.
        { model: this.model, input: batch, encoding_format: "float" },
        requestOptions,
      );
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
