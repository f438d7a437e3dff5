import type { CompletionRequest, LlmToolSpec, RequestMessage } from "./types.js";

/**
 * The JSON of a chat-completions request, made of each message's and tool's JSON kept between requests (issue 35,
 * hot path). Every LLM call of a turn sends the system prompt, the chat's history and the tools again, and every
 * turn sends the same history; the SDK encoded all of it again for each call (`JSON.stringify` of the whole body,
 * then undici's conversion of that string), in CPU and garbage that grew with the history. Here a message's JSON
 * is kept by the message object (history messages and a turn's own messages are the same objects from one request
 * to the next, see `HistoryRepository.newest` and `redactingModel`) together with the values it was made from: a
 * message changed in place since is encoded afresh. The result is byte for byte `JSON.stringify` of the body the
 * SDK would build (same keys, same order).
 */
export function chatRequestJson(request: CompletionRequest, stream: boolean): string {
  let json = `{"model":${JSON.stringify(request.model)},"messages":[`;
  request.messages.forEach((message, index) => {
    json += (index > 0 ? "," : "") + messageJson(message);
  });
  json += "]";
  if (request.tools?.length) {
    json += ',"tools":[';
    request.tools.forEach((tool, index) => {
      json += (index > 0 ? "," : "") + toolJson(tool);
    });
    json += "]";
  }
  if (request.temperature !== undefined) json += `,"temperature":${JSON.stringify(request.temperature)}`;
  json += stream ? ',"stream":true,"stream_options":{"include_usage":true}}' : ',"stream":false}';
  return json;
}

const keptMessages = new WeakMap<object, { values: unknown[]; json: string }>();

function messageJson(message: RequestMessage): string {
  // Parts (a photo's data URL) are sent for one turn only: not worth keeping.
  if (Array.isArray(message.content)) return JSON.stringify(message);
  const values = messageValues(message);
  const kept = keptMessages.get(message);
  if (kept && sameValues(kept.values, values)) return kept.json;
  const json = JSON.stringify(message);
  keptMessages.set(message, { values, json });
  return json;
}

/**
 * What a message is made of (the fields a request message has, and each tool call's): a message whose values are
 * all the same (`===`) as when something was derived from it gives the same result again.
 */
export function messageValues(message: RequestMessage): unknown[] {
  const values: unknown[] = [
    message.role,
    message.content,
    "tool_call_id" in message ? message.tool_call_id : undefined,
  ];
  const calls = "tool_calls" in message ? message.tool_calls : undefined;
  values.push(calls, calls?.length);
  for (const call of calls ?? [])
    values.push(call, call.id, call.type, call.function, call.function.name, call.function.arguments);
  return values;
}

export function sameValues(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return true;
}

/** A tool's JSON, kept by the spec object (the registry builds each tool's spec once) and its parts. */
const keptTools = new WeakMap<
  object,
  { name: string; description: string; parameters: object; json: string }
>();

function toolJson(tool: LlmToolSpec): string {
  const { name, description, parameters } = tool.function;
  const kept = keptTools.get(tool);
  if (kept && kept.name === name && kept.description === description && kept.parameters === parameters)
    return kept.json;
  const json = JSON.stringify(tool);
  keptTools.set(tool, { name, description, parameters, json });
  return json;
}
