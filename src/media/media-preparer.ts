import type { Logger } from "pino";
import type { ImagePart, MediaContext, MediaPort, PreparedMedia } from "../core/media.js";
import type { Attachment, ChannelAdapter, InboundMessage } from "../core/types.js";

/** Larger photos are described, not sent: a data URL this size is already a heavy request. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** The common limit of `/audio/transcriptions` endpoints. */
export const MAX_AUDIO_BYTES = 25 * 1024 * 1024;
/** Images sent with one turn at most. */
export const MAX_IMAGES_PER_TURN = 4;

/** Turns audio into text for the turn `context` is (the provider files the call under that turn). */
export type MediaTranscriber = (
  audio: Buffer,
  fileName: string,
  mime: string | undefined,
  context: MediaContext,
) => Promise<string>;

export interface MediaPreparerOptions {
  vision: "auto" | boolean;
  transcribe: MediaTranscriber | null;
  logger: Logger;
  /** Asked before each transcription: a refusal (a budget is reached) says why, and nothing is sent. */
  beforeCall?: (context: MediaContext) => { allowed: true } | { allowed: false; message: string };
}

const isImage = (attachment: Attachment) =>
  attachment.kind === "image" ||
  (attachment.kind === "file" && Boolean(attachment.mime?.startsWith("image/")));
const isAudio = (attachment: Attachment) =>
  attachment.kind === "voice" ||
  attachment.kind === "audio" ||
  (attachment.kind === "file" && Boolean(attachment.mime?.startsWith("audio/")));

/**
 * Media in (DESIGN.md → Agent core): a photo or image file goes to the model as an image part (`llm.vision`),
 * a voice note or audio file is transcribed (`llm.transcriptionModel`) and the transcript goes into the turn.
 * Without those, the model sees the attachment's metadata only (the chat turns always add it). Downloads go
 * through the channel adapter, which fetches only from the platform's own file host.
 */
export class MediaPreparer implements MediaPort {
  constructor(private readonly options: MediaPreparerOptions) {}

  async prepare(
    messages: InboundMessage[],
    adapter: ChannelAdapter | undefined,
    context: MediaContext,
  ): Promise<PreparedMedia> {
    const images: ImagePart[] = [];
    const notes: string[] = [];
    for (const attachment of messages.flatMap((message) => message.attachments)) {
      if (context.signal.aborted) break;
      const label = attachment.name ? `"${attachment.name}"` : attachment.kind;
      if (isImage(attachment)) {
        if (this.options.vision === false) continue;
        if (images.length >= MAX_IMAGES_PER_TURN) {
          notes.push(`[image ${label} not shown: at most ${MAX_IMAGES_PER_TURN} images go with one message]`);
          continue;
        }
        const bytes = await this.download(adapter, attachment, MAX_IMAGE_BYTES, label, notes);
        if (!bytes) continue;
        const mime = await imageMime(bytes);
        if (!mime) {
          notes.push(`[image ${label} not shown: not a picture format the model takes]`);
          continue;
        }
        images.push({
          type: "image_url",
          image_url: { url: `data:${mime};base64,${bytes.toString("base64")}` },
        });
      } else if (isAudio(attachment) && this.options.transcribe) {
        const decision = this.options.beforeCall?.(context);
        if (decision && !decision.allowed) {
          notes.push(`[${label} was not transcribed: ${decision.message}]`);
          continue;
        }
        const bytes = await this.download(adapter, attachment, MAX_AUDIO_BYTES, label, notes);
        if (!bytes) continue;
        try {
          const name = audioFileName(attachment);
          const text = await this.options.transcribe(bytes, name, attachment.mime, context);
          notes.push(
            `[${attachment.kind === "voice" ? "voice note" : `audio ${label}`} transcript]: ${text.trim()}`,
          );
        } catch (error) {
          this.options.logger.warn({ err: error, session: context.sessionKey }, "transcription-failed");
          notes.push(
            `[${label} could not be transcribed: ${error instanceof Error ? error.message : String(error)}]`,
          );
        }
      }
    }
    return { images, notes };
  }

  private async download(
    adapter: ChannelAdapter | undefined,
    attachment: Attachment,
    limit: number,
    label: string,
    notes: string[],
  ): Promise<Buffer | null> {
    if (attachment.size !== undefined && attachment.size > limit) {
      notes.push(`[${label} not passed on: ${attachment.size} bytes is over the ${limit}-byte limit]`);
      return null;
    }
    if (!adapter?.download) {
      notes.push(`[${label} not passed on: this channel can't download attachments]`);
      return null;
    }
    try {
      const bytes = await adapter.download(attachment);
      if (bytes.length > limit) {
        notes.push(`[${label} not passed on: ${bytes.length} bytes is over the ${limit}-byte limit]`);
        return null;
      }
      return bytes;
    } catch (error) {
      this.options.logger.warn({ err: error }, "attachment-download-failed");
      notes.push(`[${label} could not be downloaded]`);
      return null;
    }
  }
}

const IMAGE_MIME: Record<string, string> = {
  jpg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
};

/** The picture's real format, sniffed from its bytes (a name or a declared type can lie). */
async function imageMime(bytes: Buffer): Promise<string | null> {
  try {
    const { imageSize } = await import("image-size");
    const type = imageSize(bytes).type;
    return (type && IMAGE_MIME[type]) ?? null;
  } catch {
    return null;
  }
}

function audioFileName(attachment: Attachment): string {
  if (attachment.name) return attachment.name;
  const extension = attachment.mime?.split("/")[1]?.replace("mpeg", "mp3") ?? "ogg";
  return `${attachment.kind}.${extension}`;
}
