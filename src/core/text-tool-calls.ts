import type { ToolCall } from "../llm/types.js";

/**
 * Tool calls written in the answer text by models served without native tool calling (`llm.textToolCalls`):
 * `<tool_call>{"name": …, "arguments": {…}}</tool_call>` blocks, or a fenced JSON object with `name` and
 * `arguments`. Hand-written: the two shapes are fixed and small; no maintained parser covers them. The calls
 * found go through the same registry checks as native ones (tool set, validation, approvals, authority).
 */
export function parseTextToolCalls(text: string, idPrefix: string): { calls: ToolCall[]; rest: string } {
  const calls: ToolCall[] = [];
  let rest = text;
  const take = (raw: string, whole: string): void => {
    const call = toCall(raw, `${idPrefix}-${calls.length + 1}`);
    if (!call) return;
    calls.push(call);
    rest = rest.replace(whole, "");
  };
  for (const match of text.matchAll(/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g)) take(match[1]!, match[0]);
  if (calls.length === 0) {
    for (const match of text.matchAll(/```(?:json)?\s*\n?([\s\S]*?)```/g)) take(match[1]!, match[0]);
  }
  return { calls, rest: rest.trim() };
}

function toCall(raw: string, id: string): ToolCall | null {
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
