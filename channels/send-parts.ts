import type { Button, OutboundMessage, ReplyTarget, SendProgress, SendResult } from "../src/core/types.js";
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
}

/**
 * Sends a reply as parts at the platform's limit: resumes after `progress.partsSent`, finalizes a streamed
 * draft by editing it (sending anew when it can no longer be edited), paces and posts the rest, reports each
 * delivered part, and puts the buttons on the last part.
 */
export async function sendParts<Markup>(
  target: ReplyTarget,
  message: OutboundMessage,
  sender: PartSender<Markup>,
  progress?: SendProgress,
): Promise<SendResult> {
  const parts = renderParts(message.text, sender.limit, (text) => sender.render(text, message.format));
  const messageIds: string[] = [];
  for (let index = progress?.partsSent ?? 0; index < parts.length; index++) {
    const part = parts[index]!;
    const markup = index === parts.length - 1 && message.buttons ? sender.markup(message.buttons) : undefined;
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
