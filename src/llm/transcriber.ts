import type { MagpieConfig } from "../config/schema.js";
import { isLlmConfigured } from "./create-model.js";
import { primaryEndpoint } from "./provider.js";

/** Turns audio into text. */
export type Transcriber = (audio: Buffer, fileName: string, mime: string | undefined) => Promise<string>;

/**
 * Transcription through the OpenAI-compatible `/audio/transcriptions` endpoint (`llm.transcriptionModel`), or
 * null when none is configured. The `openai` SDK is loaded on the first voice note, not at start-up.
 */
export function createTranscriber(config: MagpieConfig): Transcriber | null {
  const model = config.llm.transcriptionModel;
  if (!model || !isLlmConfigured(config)) return null;
  const endpoint = primaryEndpoint(config);
  return async (audio, fileName, mime) => {
    const [{ toFile }, openai] = await Promise.all([import("openai"), endpoint.client()]);
    const file = await toFile(audio, fileName, mime ? { type: mime } : undefined);
    const result = await openai.audio.transcriptions.create({ file, model });
    return result.text;
  };
}
