import type { ToolCall } from "../llm/types.js";

/**
 * Tool calls written in the answer text by models served without native tool calling (`llm.textToolCalls`):
 * `<tool_call>{"name": …, "arguments": {…}}</tool_call>` blocks, or a fenced JSON object with `name` and
 * `arguments`. Hand-written: the two shapes are fixed and small; no maintained parser covers them. The calls
 * found go through the same registry checks as native ones (tool set, validation, approvals, authority).
 */
export function parseTextToolCalls(text: string, idPrefix: string): { calls: ToolCall[]; rest: string } {
  let found = blocksBetween(text, "<tool_call>", "</tool_call>", idPrefix);
  if (found.calls.length === 0) found = blocksBetween(text, "```", "```", idPrefix);
  return found;
}

/** Blocks looked at in one answer: a reply carries a few calls, and each block tried may cost a JSON.parse. */
const MAX_BLOCKS_TRIED = 1000;

/**
 * The calls in `open … close` blocks (the first `close` after each `open`; a fence may name `json`), and the
 * text with those blocks cut out. Found with forward searches, not `open([\s\S]*?)close` regexes, which rescan
 * to the end of the text from every opening that never closes.
 */
function blocksBetween(
  text: string,
  open: string,
  close: string,
  idPrefix: string,
): { calls: ToolCall[]; rest: string } {
  const calls: ToolCall[] = [];
  const kept: string[] = [];
  let copied = 0;
  let tried = 0;
  for (let start = text.indexOf(open); start >= 0 && tried < MAX_BLOCKS_TRIED; tried++) {
    let body = start + open.length;
    if (open === "```" && text.startsWith("json", body)) body += 4;
    const end = text.indexOf(close, body);
    // No close after this opening means none after any later one either.
    if (end < 0) break;
    const call = toCall(text.slice(body, end).trim(), `${idPrefix}-${calls.length + 1}`);
    const after = end + close.length;
    if (call) {
      calls.push(call);
      kept.push(text.slice(copied, start));
      copied = after;
    }
    start = text.indexOf(open, after);
  }
  kept.push(text.slice(copied));
  return { calls, rest: kept.join("").trim() };
}

function toCall(raw: string, id: string): ToolCall | null {
  // Only an object can be a call; a failed JSON.parse costs a thrown error, and a megabyte of backticks is a
  // hundred thousand blocks (1 MB of them took 3 s).
  if (!raw.startsWith("{") || !raw.endsWith("}")) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return null;
  const { name, arguments: args } = parsed as { name?: unknown; arguments?: unknown };
  if (typeof name !== "string" || !name) return null;
  const argumentText =
    typeof args === "string" ? args : JSON.stringify(args && typeof args === "object" ? args : {});
  return { id, type: "function", function: { name, arguments: argumentText } };
}
