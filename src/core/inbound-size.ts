import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { InboundMessage } from "./types.js";

/**
 * `agent.maxInboundChars` (DESIGN.md → Message flow → Input sizes): a text over the limit is cut there and the rest
 * written to `inbound/<channel>-<message id>.txt` in the workspace; the text the model sees names that file.
 */
export function cutLongInbound(message: InboundMessage, maxChars: number, workspace: string): InboundMessage {
  if (message.text.length <= maxChars) return message;
  const rest = message.text.slice(maxChars);
  const relative = path.join(
    "inbound",
    `${message.channel}-${message.messageId}.txt`.replace(/[^\w.-]/g, "_"),
  );
  mkdirSync(path.join(workspace, "inbound"), { recursive: true });
  writeFileSync(path.join(workspace, relative), rest);
  const note = `[Message cut at ${maxChars} characters (agent.maxInboundChars); the other ${rest.length} characters are in the workspace file ${relative} — read it with file_read when needed.]`;
  return { ...message, text: `${message.text.slice(0, maxChars)}\n\n${note}` };
}
