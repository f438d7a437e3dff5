import { z } from "zod";

/** How a chat's replies are spoken: the config default and each chat's `/voice` choice. */
export const voiceModeSchema = z.enum(["off", "mirror", "always"]);

/** `voice`: spoken replies (DESIGN.md → Agent core → Voice out). */
export const voiceSchema = z
  .strictObject({
    /** `mirror` answers a voice note with a voice note (and the text), `always` every reply; `/voice` per chat. */
    replies: voiceModeSchema.default("off"),
    /** `llm`: the OpenAI-compatible /audio/speech endpoint (ledger, budgets); `espeak`: espeak-ng on the box. */
    engine: z.enum(["llm", "espeak"]).default("llm"),
    /** The /audio/speech model (engine llm); default `tts-1`. */
    speechModel: z.string().min(1).optional(),
    /** The speaker: an /audio/speech voice (default `alloy`) or an espeak-ng voice (default `en`). */
    voice: z.string().min(1).optional(),
  })
  .prefault({});

export type VoiceConfig = z.infer<typeof voiceSchema>;

/** How a chat's replies are spoken. */
export type VoiceMode = VoiceConfig["replies"];
