import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import type { MagpieConfig } from "../config/schema.js";
import { MagpieError } from "../lib/errors.js";
import type { CallScope } from "../llm/llm-call.js";
import { type LlmProviders, llmProviders } from "../llm/provider.js";

/** Spoken audio: OGG/Opus (a voice note anywhere) or WAV (an audio file until it is encoded). */
export interface Speech {
  bytes: Buffer;
  format: "ogg" | "wav";
}

/** Turns text into speech; `scope` is who an LLM call is for (its ledger row). */
export type Synthesizer = (text: string, scope?: CallScope) => Promise<Speech>;

const PROGRAM_TIMEOUT_MS = 60_000;
/** Largest audio a program may write (a 4,000-character WAV is about 10 MB). */
const MAX_AUDIO_BYTES = 50 * 1024 * 1024;

/** The first of `names` on the PATH, or null. */
export function programOnPath(names: readonly string[], searchPath = process.env.PATH ?? ""): string | null {
  for (const name of names) {
    for (const dir of searchPath.split(path.delimiter)) {
      if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
    }
  }
  return null;
}

/** What encodes WAV into OGG/Opus here: opus-tools' opusenc, else ffmpeg; null when neither is installed. */
export function opusEncoder(): string | null {
  return programOnPath(["opusenc", "ffmpeg"]);
}

/**
 * `/audio/speech` of `llm`'s endpoint provider (its client, its redaction, its ledger), asking for `opus` (an
 * OGG/Opus file: a voice note as it is). The `openai` SDK is loaded on the first spoken reply, not at start-up.
 */
export function llmSynthesizer(
  config: MagpieConfig,
  providers: LlmProviders = llmProviders(config),
): Synthesizer {
  const model = config.voice.speechModel ?? "tts-1";
  const voice = config.voice.voice ?? "alloy";
  const provider = providers.primary();
  return async (text, scope) => {
    const bytes = await provider.speech(model, voice, text, "opus", scope);
    return { bytes, format: isOggOpus(bytes) ? "ogg" : "wav" };
  };
}

/** espeak-ng on the box: WAV on stdout, no network, no cost. */
export function espeakSynthesizer(config: MagpieConfig): Synthesizer {
  const voice = config.voice.voice ?? "en";
  return async (text) => {
    const program = programOnPath(["espeak-ng"]);
    if (!program) {
      throw new MagpieError(
        "voice.no_espeak",
        "voice.engine is espeak but espeak-ng is not installed (sudo apt install espeak-ng).",
      );
    }
    // The text goes on stdin, never as an argument: a reply starting with "-" is no option.
    return { bytes: await run(program, ["-v", voice, "--stdout"], Buffer.from(text)), format: "wav" };
  };
}

/** Encodes WAV into OGG/Opus with opusenc or ffmpeg; throws `voice.no_encoder` when neither is installed. */
export async function encodeOggOpus(wav: Buffer): Promise<Buffer> {
  const encoder = opusEncoder();
  if (!encoder) {
    throw new MagpieError(
      "voice.no_encoder",
      "No OGG/Opus encoder: install opus-tools (or ffmpeg) to send voice notes.",
    );
  }
  const args =
    path.basename(encoder) === "opusenc"
      ? ["--quiet", "--bitrate", "24", "-", "-"]
      : [
          "-hide_banner",
          "-loglevel",
          "error",
          "-i",
          "pipe:0",
          "-c:a",
          "libopus",
          "-b:a",
          "24k",
          "-f",
          "ogg",
          "pipe:1",
        ];
  return run(encoder, args, wav);
}

/** True for an OGG stream whose first packet is an Opus head: what Telegram's sendVoice plays. */
export function isOggOpus(bytes: Buffer): boolean {
  return (
    bytes.subarray(0, 4).toString("latin1") === "OggS" &&
    bytes.subarray(0, 64).toString("latin1").includes("OpusHead")
  );
}

/** Runs `program` with `input` on stdin and returns its stdout; a non-zero exit, a timeout or too much output throws. */
function run(program: string, args: string[], input: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let size = 0;
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), PROGRAM_TIMEOUT_MS);
    child.stdout.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_AUDIO_BYTES) child.kill("SIGKILL");
      else out.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 2000) stderr += chunk.toString();
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(Buffer.concat(out));
      else
        reject(
          new MagpieError(
            "voice.program_failed",
            `${path.basename(program)} failed (${signal ?? `exit ${code}`}): ${stderr.trim().slice(0, 300)}`,
          ),
        );
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(input);
  });
}
