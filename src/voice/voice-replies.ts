import { randomUUID } from "node:crypto";
import { mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import type { SlashCommand } from "../core/commands.js";
import type { AnsweredTurn } from "../core/hooks.js";
import type { Messenger } from "../core/messenger.js";
import type { SpendPort, SpendScope } from "../core/spend.js";
import type { OutboundMessage } from "../core/types.js";
import { errorMessage } from "../lib/errors.js";
import type { KvRepository } from "../store/kv.js";
import type { Speech, Synthesizer } from "./speech.js";

/** Longest text spoken (OpenAI's /audio/speech takes 4,096 characters); the rest is in the text reply. */
const MAX_SPOKEN_CHARS = 4000;

import { type VoiceMode, voiceModeSchema } from "../config/sections/voice.js";

/** Spoken replies are kept this long for the outbox (a retry re-reads the file), then pruned. */
const KEEP_MS = 24 * 60 * 60 * 1000;

export interface VoiceRepliesDeps {
  config: MagpieConfig;
  kv: KvRepository;
  logger: Logger;
  messenger: Messenger;
  spend: () => SpendPort | null;
  /** Where spoken replies are written for the outbox (`<dataDir>/voice`). */
  dir: string;
  now: () => number;
  /** The synthesizer and encoder; loaded on the first spoken reply (tests may hand their own). */
  speech?: () => Promise<{ synthesize: Synthesizer; encode: (wav: Buffer) => Promise<Buffer> }>;
}

/** Where a chat's `/voice` choice is kept (survives restarts). */
export function voiceModeKey(sessionKey: string): string {
  return `voice:${sessionKey}`;
}

/**
 * Voice replies (DESIGN.md → Voice out): after a chat turn's text reply is queued, speaks it — `mirror` when a
 * voice note came in, `always` for every reply — and queues the audio after the text: a voice note (OGG/Opus,
 * Telegram's sendVoice) where it could be encoded, else a WAV file. `llm` speech is checked against the budgets
 * before and recorded in the ledger by the LLM provider; a refusal or a failure costs the chat only the audio.
 */
export class VoiceReplies {
  private speech: ReturnType<NonNullable<VoiceRepliesDeps["speech"]>> | undefined;

  constructor(private readonly deps: VoiceRepliesDeps) {}

  /** This chat's mode: its `/voice` choice, else `voice.replies`. */
  modeOf(sessionKey: string): VoiceMode {
    return this.deps.kv.get(voiceModeKey(sessionKey), voiceModeSchema) ?? this.deps.config.voice.replies;
  }

  /** The `afterReply` hook. */
  async afterReply(turn: AnsweredTurn): Promise<void> {
    const mode = this.modeOf(turn.sessionKey);
    if (mode === "off") return;
    const voiceIn = turn.messages.some((message) =>
      message.attachments.some((attachment) => attachment.kind === "voice"),
    );
    if (mode === "mirror" && !voiceIn) return;
    const text = spokenText(turn.reply);
    if (!text) return;
    const { config, logger } = this.deps;
    const llm = config.voice.engine === "llm";
    const scope: SpendScope = {
      origin: "user",
      sessionKey: turn.budget.sessionKey,
      historyKey: turn.sessionKey,
      turnId: turn.budget.turnId,
      agent: turn.agent,
    };
    if (llm) {
      const decision = this.deps.spend()?.beforeCall(scope);
      if (decision && !decision.allowed) {
        logger.info({ session: turn.sessionKey }, "voice-reply-skipped-budget");
        return;
      }
    }
    this.speech ??= this.deps.speech ? this.deps.speech() : loadSpeech(config);
    const { synthesize, encode } = await this.speech;
    // `llm` speech is filed under the turn by the provider, whether or not audio came back (it may be billed).
    const speech: Speech = await synthesize(text, scope);
    const file = await this.fileOf(speech, encode);
    this.deps.messenger.send(turn.target, { text: "", file }, "reply");
  }

  /** Writes the audio for the outbox: OGG/Opus as a voice note, or WAV as a file when it could not be encoded. */
  private async fileOf(
    speech: Speech,
    encode: (wav: Buffer) => Promise<Buffer>,
  ): Promise<NonNullable<OutboundMessage["file"]>> {
    let bytes = speech.bytes;
    let ogg = speech.format === "ogg";
    if (!ogg) {
      try {
        bytes = await encode(speech.bytes);
        ogg = true;
      } catch (error) {
        this.deps.logger.warn({ err: errorMessage(error) }, "voice-reply-not-encoded-sending-wav");
      }
    }
    await mkdir(this.deps.dir, { recursive: true, mode: 0o700 });
    await this.prune();
    const name = ogg ? "reply.ogg" : "reply.wav";
    const filePath = path.join(this.deps.dir, `${this.deps.now()}-${randomUUID()}${path.extname(name)}`);
    await writeFile(filePath, bytes, { mode: 0o600 });
    return ogg
      ? { path: filePath, name, kind: "voice", mime: "audio/ogg" }
      : { path: filePath, name, kind: "document", mime: "audio/wav" };
  }

  /** Deletes spoken replies older than a day (the outbox has long sent or given up on them). */
  private async prune(): Promise<void> {
    const cutoff = this.deps.now() - KEEP_MS;
    for (const entry of await readdir(this.deps.dir).catch(() => [] as string[])) {
      const full = path.join(this.deps.dir, entry);
      const info = await stat(full).catch(() => null);
      if (info && info.mtimeMs < cutoff) await rm(full, { force: true });
    }
  }

  /** `/voice [on|off|mirror|default]`: shows or sets this chat's spoken replies (owners only). */
  command(): SlashCommand {
    return {
      name: "voice",
      description: "Show or set spoken replies in this chat",
      usage: "voice [on | off | mirror | default]",
      ownerOnly: true,
      run: ({ args, sessionKey }) => {
        const wanted = args.trim().toLowerCase();
        const modes: Record<string, VoiceMode> = {
          on: "always",
          always: "always",
          off: "off",
          mirror: "mirror",
        };
        if (!wanted) return `${describe(this.modeOf(sessionKey))} Change it with /voice on, off or mirror.`;
        if (wanted === "default") {
          this.deps.kv.delete(voiceModeKey(sessionKey));
          return `Back to the default: ${describe(this.deps.config.voice.replies)}`;
        }
        const mode = modes[wanted];
        if (!mode) return `Unknown choice "${wanted}": use /voice on, off, mirror or default.`;
        this.deps.kv.set(voiceModeKey(sessionKey), mode);
        return describe(mode);
      },
    };
  }
}

function describe(mode: VoiceMode): string {
  switch (mode) {
    case "always":
      return "Voice replies are on here: every answer also comes as audio.";
    case "mirror":
      return "Voice replies mirror you here: a voice note gets a spoken answer (and the text).";
    default:
      return "Voice replies are off here.";
  }
}

async function loadSpeech(config: MagpieConfig) {
  const speech = await import("./speech.js");
  return {
    synthesize:
      config.voice.engine === "llm" ? speech.llmSynthesizer(config) : speech.espeakSynthesizer(config),
    encode: speech.encodeOggOpus,
  };
}

/** The reply as it is read aloud: no code blocks, no Markdown marks, link labels without their URLs. */
export function spokenText(markdown: string): string {
  // Only the start is spoken: the patterns below run on at most twice the spoken length.
  const source = markdown.slice(0, MAX_SPOKEN_CHARS * 2);
  const text = source
    .replace(/```[\s\S]*?(?:```|$)/g, " ")
    // regex-input-bounded: `source`, at most 8,000 characters
    .replace(/\[([^\]\n]*)\]\([^)\n]*\)/g, "$1")
    .replace(/https?:\/\/\S+/g, " ")
    .replace(/[*_~`#>|]/g, "")
    .replace(/[ \t]+/g, " ")
    .trim();
  if (text.length <= MAX_SPOKEN_CHARS) return text;
  const cut = text.slice(0, MAX_SPOKEN_CHARS);
  const lastSpace = cut.lastIndexOf(" ");
  return `${lastSpace > MAX_SPOKEN_CHARS / 2 ? cut.slice(0, lastSpace) : cut}…`;
}
