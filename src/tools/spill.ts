import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const HANDLE = /^spill-[a-f0-9]{16}$/;
const HEAD_CHARS = 4_000;
const TAIL_CHARS = 2_000;

/** Keeps oversized tool output on disk (`data/spill/`) and gives the model a head, a tail and a handle. */
export class SpillStore {
  constructor(
    private readonly directory: string,
    private readonly thresholdChars: number,
  ) {}

  /** Returns `text` unchanged when small; otherwise spills it and returns the excerpt with the handle. */
  maybeSpill(text: string, toolName: string): string {
    if (text.length <= this.thresholdChars) return text;
    const handle = `spill-${randomBytes(8).toString("hex")}`;
    mkdirSync(this.directory, { recursive: true });
    writeFileSync(path.join(this.directory, `${handle}.txt`), text, "utf8");
    const omitted = text.length - HEAD_CHARS - TAIL_CHARS;
    return [
      text.slice(0, HEAD_CHARS),
      `\n[… ${omitted} characters omitted. The full ${toolName} output (${text.length} characters) is saved as "${handle}"; read any part with spill_read {"handle": "${handle}", "offset": <char offset>, "limit": <chars>}.]\n`,
      text.slice(-TAIL_CHARS),
    ].join("");
  }

  /** Reads a slice of a spilled output; returns null for an unknown or malformed handle. */
  read(handle: string, offset: number, limit: number): { text: string; total: number } | null {
    if (!HANDLE.test(handle)) return null;
    let content: string;
    try {
      content = readFileSync(path.join(this.directory, `${handle}.txt`), "utf8");
    } catch {
      return null;
    }
    return { text: content.slice(offset, offset + limit), total: content.length };
  }
}
