import { ChannelSendError } from "../src/lib/errors.js";

/**
 * Runs the edit that finalizes a streamed draft; null when the draft cannot be edited any more (deleted,
 * too old — a permanent refusal), so the caller sends the text as a new message instead of losing it.
 */
export async function editedOrNull(edit: () => Promise<unknown>, messageId: string): Promise<string | null> {
  try {
    await edit();
    return messageId;
  } catch (error) {
    if (error instanceof ChannelSendError && error.permanent) return null;
    throw error;
  }
}
