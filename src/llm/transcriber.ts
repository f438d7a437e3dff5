import type { MagpieConfig } from "../config/schema.js";
import { isLlmConfigured } from "./create-model.js";

/** Turns audio into text. */
export type Transcriber = (audio: Buffer, fileName: string, mime: string | undefined) => Promise<string>;

/**
 * Transcription through the OpenAI-compatible `/audio/transcriptions` endpoint (`llm.transcriptionModel`), or
 * null when none is configured. The `openai` SDK is loaded on the first voice note, not at start-up.
 */
export function createTranscriber(config: MagpieConfig): Transcriber | null {
  const model = config.llm.transcriptionModel;
  if (!model || !isLlmConfigured(config)) return null;
  let client:
    | Promise<{ create: (audio: Buffer, name: string, mime?: string) => Promise<string> }>
    | undefined;
  const load = () => {
    client ??= import("openai").then(({ default: OpenAI, toFile }) => {
      const openai = new OpenAI({
        apiKey: config.llm.apiKey ?? "not-needed",
        baseURL: config.llm.baseUrl,
        timeout: config.llm.timeoutMs,
        maxRetries: config.llm.maxRetries,
      });
      return {
        create: async (audio, name, mime) => {
          const file = await toFile(audio, name, mime ? { type: mime } : undefined);
          const result = await openai.audio.transcriptions.create({ file, model });
          return result.text;
        },
      };
    });
    return client;
  };
  return async (audio, fileName, mime) => (await load()).create(audio, fileName, mime);
}
