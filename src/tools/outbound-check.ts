import fs from "node:fs/promises";
import { GuardRefusal } from "../security/guard-refusal.js";
import { OUTPUT_BLOCKED, type OutboundPart, refuseOutbound } from "../security/output-filter.js";
import type { ToolContext } from "./context.js";

/**
 * The output filter at a tool's send point: throws a `security.output_blocked` refusal when the turn is tainted
 * and `parts` hold one of the owner's secrets or a fragment of the owners' private memories (all of them are
 * private: DESIGN.md → Security → Memory privacy). Untainted turns pass untouched.
 */
export function refuseOutboundLeak(context: ToolContext, parts: readonly OutboundPart[]): void {
  refuseOutbound(parts, {
    // The turn's provenance (issue 36 item 1) says whether it is tainted; absent, the turn is not.
    tainted: context.isTainted?.() === true,
    secrets: context.services.redactor,
    privateMemories: () => privateMemoryContents(context),
  });
}

/** The contents of the memories only owners may see, of every agent (a turn's own agent is not the only one). */
function* privateMemoryContents(context: ToolContext): Iterable<string> {
  const memory = context.services.memory;
  if (!memory) return;
  for (const record of memory.all()) if (record.audience === "owners") yield record.content;
}

/** The most of a file a tainted turn may send: it is checked whole, and checking costs about 0.2 s a megabyte. */
export const MAX_CHECKED_FILE_BYTES = 8 * 1024 * 1024;

/**
 * The output filter over a file a tainted turn sends (read as text: a secret inside a compressed or binary format
 * is not seen). A file too big to check is refused rather than sent unchecked.
 */
export async function refuseLeakingFile(context: ToolContext, file: string): Promise<void> {
  const { size } = await fs.stat(file);
  if (size > MAX_CHECKED_FILE_BYTES) {
    throw new GuardRefusal(
      OUTPUT_BLOCKED,
      `Refused: this turn has read untrusted content, and the file is ${(size / 1024 / 1024).toFixed(1)} MB — too big to check for secrets and private memories (the limit is ${MAX_CHECKED_FILE_BYTES / 1024 / 1024} MB). Send a smaller file, or ask the owner to send it in a new message.`,
    );
  }
  refuseOutboundLeak(context, [{ kind: "file", value: await fs.readFile(file, "utf8") }]);
}
