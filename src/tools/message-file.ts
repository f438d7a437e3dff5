import fs from "node:fs/promises";
import path from "node:path";
import { CHANNEL_ENTRIES, channelEntry } from "../../channels/catalog.js";
import type { UploadLimits } from "../../channels/channel-entry.js";
import type { OutboundMessage } from "../core/types.js";
import type { ToolContext } from "./context.js";
import { ToolError } from "./define-tool.js";
import { displayPath, requireExistingFile } from "./files/file-io.js";
import { guardPath } from "./path-guard.js";

type OutboundFile = NonNullable<OutboundMessage["file"]>;

const MB = 1024 * 1024;

/** Catalog channels that take files, for the refusal's hint. */
const FILE_CHANNELS = CHANNEL_ENTRIES.filter((entry) => entry.uploads)
  .map((entry) => entry.name)
  .join(", ");

/** The console is this machine: a file shown there is never too big. */
const CONSOLE_LIMITS: UploadLimits = { photo: Number.POSITIVE_INFINITY, document: Number.POSITIVE_INFINITY };

/** Image formats every platform shows as a picture, by their first bytes (the extension alone can lie). */
const PHOTO_SIGNATURES: Array<{ mime: string; matches: (head: Buffer) => boolean }> = [
  {
    mime: "image/png",
    matches: (head) => head.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])),
  },
  { mime: "image/jpeg", matches: (head) => head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff },
  {
    mime: "image/webp",
    matches: (head) =>
      head.subarray(0, 4).toString("latin1") === "RIFF" && head.subarray(8, 12).toString("latin1") === "WEBP",
  },
];

const DOCUMENT_MIME: Record<string, string> = {
  ".gif": "image/gif",
  ".svg": "image/svg+xml",
  ".pdf": "application/pdf",
  ".txt": "text/plain",
  ".log": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".json": "application/json",
  ".html": "text/html",
  ".zip": "application/zip",
  ".gz": "application/gzip",
  ".mp3": "audio/mpeg",
  ".ogg": "audio/ogg",
  ".mp4": "video/mp4",
};

/**
 * Checks a file the `message` tool is to send, the way file_read checks a read (the file guard refuses
 * Magpie's own state and secrets), caps its size for the target channel and decides photo or document.
 * Returns what the outbox item stores: the real path, not the bytes.
 */
export async function prepareOutboundFile(
  context: ToolContext,
  requested: string,
  channel: string,
): Promise<OutboundFile> {
  const limits = channel === "console" ? CONSOLE_LIMITS : channelEntry(channel)?.uploads;
  if (!limits) {
    throw new ToolError(
      "message.file_unsupported",
      `Channel "${channel}" cannot receive files from Magpie; send the text alone, or send the file to ${FILE_CHANNELS}.`,
    );
  }
  const resolved = await guardPath(context, requested, "read");
  requireExistingFile(resolved);
  const stats = await fs.stat(resolved.real);
  const shown = displayPath(context, resolved.real);
  if (stats.size > limits.document) {
    throw new ToolError(
      "message.file_too_large",
      `${shown} is ${formatSize(stats.size)}; ${channel} takes files up to ${formatSize(limits.document)}. Compress or split it, or send a link instead.`,
    );
  }
  const name = path.basename(resolved.real);
  const head = await firstBytes(resolved.real, 12);
  const detected = PHOTO_SIGNATURES.find((signature) => signature.matches(head))?.mime;
  const kind = detected && stats.size <= limits.photo ? "photo" : "document";
  const mime = detected ?? DOCUMENT_MIME[path.extname(name).toLowerCase()];
  return { path: resolved.real, name, kind, ...(mime ? { mime } : {}) };
}

async function firstBytes(file: string, count: number): Promise<Buffer> {
  const handle = await fs.open(file, "r");
  try {
    const buffer = Buffer.alloc(count);
    const { bytesRead } = await handle.read(buffer, 0, count, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

function formatSize(bytes: number): string {
  return bytes >= MB ? `${(bytes / MB).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} KB`;
}
