import type { MagpieConfig } from "../config/schema.js";
import { opusEncoder, programOnPath } from "./speech.js";

/** One `magpie doctor` line. */
export interface VoiceCheck {
  name: string;
  verdict: "ok" | "fail" | "skip";
  detail: string;
  fix?: string;
}

/**
 * `magpie doctor`'s voice line: whether spoken replies can be made here. espeak-ng is needed for `engine: espeak`;
 * an OGG/Opus encoder (opus-tools, or ffmpeg) turns its WAV into voice notes — without one they go as WAV files.
 * `engine: llm` gets OGG/Opus from the endpoint and needs neither.
 */
export function voiceChecks(config: MagpieConfig): VoiceCheck[] {
  const { replies, engine } = config.voice;
  const encoder = opusEncoder();
  if (engine === "llm") {
    return [
      {
        name: "voice",
        verdict: replies === "off" ? "skip" : "ok",
        detail: `replies ${replies} (/voice per chat); spoken by /audio/speech (${config.voice.speechModel ?? "tts-1"}) as OGG/Opus`,
      },
    ];
  }
  if (!programOnPath(["espeak-ng"])) {
    return [
      {
        name: "voice",
        verdict: "fail",
        detail: "voice.engine is espeak but espeak-ng is not installed: no spoken replies",
        fix: "sudo apt install espeak-ng",
      },
    ];
  }
  if (!encoder) {
    return [
      {
        name: "voice",
        verdict: "fail",
        detail: "espeak-ng speaks, but no OGG/Opus encoder: replies go as WAV files, not voice notes",
        fix: "sudo apt install opus-tools (or ffmpeg)",
      },
    ];
  }
  return [
    {
      name: "voice",
      verdict: replies === "off" ? "skip" : "ok",
      detail: `replies ${replies} (/voice per chat); spoken by espeak-ng, voice notes encoded with ${encoder}`,
    },
  ];
}
