import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { Attachment, InboundMessage } from "../core/types.js";
import { MAX_ATTACHMENT_BYTES } from "../security/platform-files.js";
import type { Store } from "../store/index.js";
import { defineTool, ToolError } from "./define-tool.js";
import { displayPath } from "./files/file-io.js";
import { ensureWorkspace, guardPath } from "./path-guard.js";

const MAX_BYTES = MAX_ATTACHMENT_BYTES;
/** How far back in the chat to look for the message that carried the attachment. */
const RECENT_MESSAGES = 50;

/** The newest message of the session that carried attachments (inbox payloads keep their metadata). */
function latestWithAttachments(store: Store, sessionKey: string): InboundMessage | undefined {
  for (const item of store.inbox.recentOfSession(sessionKey, RECENT_MESSAGES)) {
    if (item.message.attachments.length > 0) return item.message;
  }
  return undefined;
}

/** A file name safe to create: no directories, no leading dots, printable. */
function safeFileName(attachment: Attachment, index: number): string {
  const base = path
    .basename(attachment.name ?? "")
    .replace(/[^\w.\- ]+/g, "_")
    .replace(/^\.+/, "");
  return base || `${attachment.kind}-${index}`;
}

export const attachmentSaveTool = defineTool({
  name: "attachment_save",
  description:
    "Save a file, photo or voice note the user sent in this chat into the workspace (default attachments/<name>) so file tools can read it. Uses the most recent message that had attachments; `index` picks one of them (1 = first).",
  inputSchema: z.object({
    index: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("Which attachment of that message (1 = first, the default)."),
    path: z
      .string()
      .min(1)
      .optional()
      .describe("Where to save it, relative to the workspace (default attachments/<name>)."),
  }),
  risk: "medium",
  async execute(input, context) {
    const store = context.services.store;
    const message = latestWithAttachments(store, context.sessionKey);
    if (!message) {
      throw new ToolError("attachment.none", "No recent message in this chat carried an attachment.");
    }
    const index = input.index ?? 1;
    const attachment = message.attachments[index - 1];
    if (!attachment) {
      throw new ToolError(
        "attachment.no_such_index",
        `The last message with attachments has ${message.attachments.length}; index ${index} does not exist.`,
      );
    }
    if (attachment.size !== undefined && attachment.size > MAX_BYTES) {
      throw new ToolError(
        "attachment.too_large",
        `The attachment is ${attachment.size} bytes; the limit is ${MAX_BYTES}.`,
      );
    }
    const channels = context.services.channels;
    const adapter = channels?.get(message.channel);
    if (!adapter?.download) {
      throw new ToolError(
        "attachment.unsupported",
        `The ${message.channel} channel cannot download attachments.`,
      );
    }
    await ensureWorkspace(context);
    const target = await guardPath(
      context,
      input.path ?? path.join("attachments", safeFileName(attachment, index)),
      "write",
    );
    const bytes = await adapter.download(attachment).catch((error: unknown) => {
      // Refusals (attachment.foreign_host, ssrf.*) and sized failures keep their own code and audit verdict.
      if (error instanceof ToolError) throw error;
      throw new ToolError(
        "attachment.download_failed",
        `Downloading the attachment failed: ${String(error)}`,
      );
    });
    if (bytes.length > MAX_BYTES) {
      throw new ToolError(
        "attachment.too_large",
        `The attachment is ${bytes.length} bytes; the limit is ${MAX_BYTES}.`,
      );
    }
    await fs.mkdir(path.dirname(target.real), { recursive: true });
    await fs.writeFile(target.real, bytes);
    return {
      ok: true,
      path: displayPath(context, target.real),
      bytes: bytes.length,
      kind: attachment.kind,
      ...(attachment.mime ? { mime: attachment.mime } : {}),
    };
  },
});
