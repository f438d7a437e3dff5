import type { MagpieConfig } from "../config/schema.js";
import { isLlmConfigured } from "./create-model.js";
import type { CallScope } from "./llm-call.js";
import { type LlmProviders, llmProviders } from "./provider.js";

/** Turns audio into text; `scope` is who the call is for (its ledger row). */
export type Transcriber = (
  audio: Buffer,
  fileName: string,
  mime: string | undefined,
  scope?: CallScope,
) => Promise<string>;

/**
 * Transcription through the OpenAI-compatible `/audio/transcriptions` endpoint (`llm.transcriptionModel`), or
 * null when none is configured. The `openai` SDK is loaded on the first voice note, not at start-up.
 */
export function createTranscriber(
  config: MagpieConfig,
  providers: LlmProviders = llmProviders(config),
): Transcriber | null {
  const model = config.llm.transcriptionModel;
  if (!model || !isLlmConfigured(config)) return null;
  const provider = providers.primary();
  return (audio, fileName, mime, scope) => provider.transcription(model, audio, fileName, mime, scope);
}
