import type { ChatRequestBody } from "../fakes/openai.js";

/** The tool results the model saw in a request, by tool name (from the assistant's calls and the tool messages). */
export function toolResults(body: ChatRequestBody): Record<string, string> {
  const names = new Map<string, string>();
  for (const message of body.messages) {
    for (const call of (message.tool_calls ?? []) as Array<{ id: string; function: { name: string } }>) {
      names.set(call.id, call.function.name);
    }
  }
  const results: Record<string, string> = {};
  for (const message of body.messages) {
    if (message.role === "tool" && message.tool_call_id) {
      results[names.get(message.tool_call_id) ?? message.tool_call_id] = String(message.content);
    }
  }
  return results;
}
