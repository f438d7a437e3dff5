import type { BudgetScope } from "./spend.js";
import type { ChannelAdapter, InboundMessage } from "./types.js";

/** An image for the model, as an OpenAI-compatible content part (a data URL). */
export interface ImagePart {
  type: "image_url";
  image_url: { url: string };
}

/** What a turn's attachments become for the model: image parts, and notes (transcripts, why something is left out). */
export interface PreparedMedia {
  images: ImagePart[];
  notes: string[];
}

/** Whose turn the media is prepared for: a transcription is one of that turn's LLM calls, under its budgets. */
export interface MediaContext {
  sessionKey: string;
  agent: string;
  signal: AbortSignal;
  budget?: BudgetScope;
}

/**
 * Media in (DESIGN.md → Agent core): photos as image parts for a vision model, voice notes and audio files as
 * transcripts. Implemented outside the core (src/media); the chat turns ask it before a turn runs.
 */
export interface MediaPort {
  prepare(
    messages: InboundMessage[],
    adapter: ChannelAdapter | undefined,
    context: MediaContext,
  ): Promise<PreparedMedia>;
}
