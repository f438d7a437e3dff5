import { revealInvisible } from "../lib/reveal-invisible.js";

/** Where a CLI command writes text: its stdout or stderr. */
export interface TextOutput {
  write(text: string): unknown;
}

/**
 * The one way the CLI's human output reaches a terminal: every write shows control characters (C0 but newline
 * and tab, DEL, C1 such as U+009B, the 8-bit CSI), invisible and bidirectional characters as `⟦U+XXXX⟧`, as the
 * approval prompts do (src/lib/reveal-invisible.ts). A stranger's display name, a guest's message or a tool
 * name the model made up then can't write the owner's clipboard (OSC 52), clear the screen, move the cursor or
 * hide text behind backspaces and carriage returns.
 */
export function terminalOutput(stream: NodeJS.WritableStream): TextOutput {
  return { write: (text) => stream.write(revealInvisible(String(text))) };
}

/**
 * What `terminalOutput` would change in JSON text, plus DEL and C1 (JSON.stringify escapes C0 only): written as
 * `\uXXXX`, which parses back to the same string.
 */
const JSON_UNSAFE = /[\p{Cf}\u007f-\u009f\u2028\u2029]/gu;

/**
 * `--json` output: `JSON.stringify` with every character a terminal could act on, or an owner could not see,
 * escaped as `\uXXXX` — the same value once parsed, nothing raw on the terminal (and `terminalOutput` has nothing
 * left to change in it).
 */
export function jsonText(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? "null").replace(JSON_UNSAFE, (char) => {
    let escaped = "";
    for (let index = 0; index < char.length; index++) {
      escaped += `\\u${char.charCodeAt(index).toString(16).padStart(4, "0")}`;
    }
    return escaped;
  });
}
