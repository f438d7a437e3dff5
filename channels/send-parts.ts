import { constants } from "node:fs";
import { open } from "node:fs/promises";
import type { Button, OutboundMessage, ReplyTarget, SendProgress, SendResult } from "../src/core/types.js";
import { ChannelSendError, errorMessage } from "../src/lib/errors.js";
import { editedOrNull } from "./draft-edit.js";
import { type RenderedPart, renderParts } from "./format/chunk.js";
import type { Pacer } from "./format/pacer.js";

/** One platform's side of a multi-part send: its limit, its dialect and its calls for one part. */
export interface PartSender<Markup> {
  /** Characters of one message on the platform. */
  limit: number;
  /** Renders one chunk of the reply (Markdown, or plain text when `format` is plain) to the platform. */
  render(markdown: string, format: OutboundMessage["format"]): string;
  /** Paces new messages (edits go at once); absent or null sends at once. */
  pacer?: Pacer | null;
  /** Platform markup for the message's buttons; made once, for the last part only. */
  markup(buttons: Button[][]): Markup;
  /** Edits the streamed draft `messageId` into the first part; rejects with ChannelSendError. */
  edit(messageId: string, part: RenderedPart, markup: Markup | undefined): Promise<unknown>;
  /** Sends one part as a new message and returns its id; `first` marks the part that answers the reply. */
  post(part: RenderedPart, markup: Markup | undefined, first: boolean): Promise<string>;
  /**
   * Sends the message's file (reading it now) with `caption` when the text fits on it, and returns its id;
   * absent when the platform takes no files (the text still goes out).
   */
  postFile?(
    file: OutboundFile,
    caption: RenderedPart | undefined,
    markup: Markup | undefined,
    first: boolean,
  ): Promise<string>;
  /** Longest rendered caption a file can carry; longer text goes as messages before the file. */
  captionLimit?: number;
  /** False where a shared file cannot carry buttons (Slack): they go on the last text part instead. */
  filesTakeButtons?: boolean;
}

/** The file of an outbound message. */
export type OutboundFile = NonNullable<OutboundMessage["file"]>;

/** One step of a send: a text part, or the file (with the text as its caption when it fits). */
type Step = { kind: "text"; part: RenderedPart } | { kind: "file"; caption: RenderedPart | undefined };

/**
 * The steps of a send, in order. A file is the last step, so a resumed send (progress counts steps) never
 * uploads it twice; a short text rides on it as the caption, unless a streamed draft is to be finalized.
 */
function stepsOf(parts: RenderedPart[], message: OutboundMessage, sender: PartSender<unknown>): Step[] {
  const textSteps = parts.map((part): Step => ({ kind: "text", part }));
  if (!message.file || !sender.postFile) return textSteps;
  const [only] = parts;
  const fitsCaption =
    parts.length === 1 &&
    only !== undefined &&
    !message.editMessageId &&
    only.formatted.length <= (sender.captionLimit ?? 0);
  // Where the file cannot carry the buttons, the text stays a message of its own to carry them.
  const buttonsNeedText = message.buttons !== undefined && sender.filesTakeButtons === false;
  if (fitsCaption && !buttonsNeedText) return [{ kind: "file", caption: only }];
  const nonEmpty = textSteps.filter((step) => step.kind !== "text" || step.part.plain.trim().length > 0);
  return [...nonEmpty, { kind: "file", caption: undefined }];
}

/**
 * Sends a reply as parts at the platform's limit: resumes after `progress.partsSent`, finalizes a streamed
 * draft by editing it (sending anew when it can no longer be edited), paces and posts the rest, reports each
 * delivered part, and puts the buttons on the last part. A file goes last (see `stepsOf`).
 */
export async function sendParts<Markup>(
  target: ReplyTarget,
  message: OutboundMessage,
  sender: PartSender<Markup>,
  progress?: SendProgress,
): Promise<SendResult> {
  const parts = renderParts(message.text, sender.limit, (text) => sender.render(text, message.format));
  const steps = stepsOf(parts, message, sender as PartSender<unknown>);
  const buttonsAt =
    sender.filesTakeButtons === false && steps.at(-1)?.kind === "file" ? steps.length - 2 : steps.length - 1;
  const messageIds: string[] = [];
  for (let index = progress?.partsSent ?? 0; index < steps.length; index++) {
    const step = steps[index]!;
    const markup = index === buttonsAt && message.buttons ? sender.markup(message.buttons) : undefined;
    if (step.kind === "file") {
      await sender.pacer?.wait(target.chatId);
      const id = await sender.postFile!(message.file!, step.caption, markup, index === 0);
      messageIds.push(id);
      progress?.onPartSent(index, id);
      continue;
    }
    const part = step.part;
    const draftId = index === 0 ? message.editMessageId : undefined;
    let id = draftId ? await editedOrNull(() => sender.edit(draftId, part, markup), draftId) : null;
    if (id === null) {
      await sender.pacer?.wait(target.chatId);
      id = await sender.post(part, markup, index === 0);
    }
    messageIds.push(id);
    progress?.onPartSent(index, id);
  }
  return { messageIds };
}

/** Runs the formatted call; when the platform rejects the formatting, runs the plain-text call instead. */
export async function formattedOrPlain<T>(
  formatted: () => Promise<T>,
  plain: () => Promise<T>,
  isFormattingRejection: (error: unknown) => boolean,
): Promise<T> {
  try {
    return await formatted();
  } catch (error) {
    if (!isFormattingRejection(error)) throw error;
    return plain();
  }
}

/** Largest file an adapter reads into memory (the biggest per-channel cap of the `message` tool). */
const MAX_OUTBOUND_FILE_BYTES = 100 * 1024 * 1024;

/**
 * Reads the file to send. The tool guarded the real path when it queued it; a symlink put in its place since
 * then is not followed, and a file gone, grown past the ceiling or unreadable is a permanent failure
 * (retrying would not change it).
 */
export async function readOutboundFile(file: OutboundFile): Promise<Buffer> {
  const refuse = (reason: string, cause?: unknown) =>
    new ChannelSendError(`Cannot send ${file.path}: ${reason}`, {
      code: "channel.file_unreadable",
      permanent: true,
      cause,
    });
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file.path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    throw refuse(errorMessage(error), error);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw refuse("not a regular file");
    if (stats.size > MAX_OUTBOUND_FILE_BYTES) throw refuse(`larger than ${MAX_OUTBOUND_FILE_BYTES} bytes`);
    return await handle.readFile();
  } catch (error) {
    throw error instanceof ChannelSendError ? error : refuse(errorMessage(error), error);
  } finally {
    await handle.close();
  }
}

/** True when the caption has something to show (an empty text sends the file alone). */
export function hasCaption(caption: RenderedPart | undefined): caption is RenderedPart {
  return caption !== undefined && caption.plain.trim().length > 0;
}
