import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import { type LlmProviders, llmProviders } from "../llm/provider.js";
import type { Db } from "../store/index.js";
import { OpenAiEmbedder } from "./embedder.js";
import { MemoryService } from "./memory-service.js";

/** The memory service for `config`: hybrid recall when `llm.embeddingModel` is set, keyword-only otherwise. */
export function createMemoryService(
  config: MagpieConfig,
  db: Db,
  logger: Logger,
  clock?: Clock,
  providers: LlmProviders = llmProviders(config),
): MemoryService {
  const { embeddingModel } = config.llm;
  // Embeddings are served by `llm`'s endpoint: its provider's client, settings and redaction.
  const embedder = embeddingModel
    ? new OpenAiEmbedder({ model: embeddingModel, provider: providers.primary() })
    : null;
  return new MemoryService({ db, embedder, logger, clock });
}
