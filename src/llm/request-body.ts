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

const keptMessages = new WeakMap<object, { made: MadeOf; json: string }>();

function messageJson(message: RequestMessage): string {
  // Parts (a photo's data URL) are sent for one turn only: not worth keeping.
  if (Array.isArray(message.content)) return JSON.stringify(message);
  const kept = keptMessages.get(message);
  if (kept && sameAsMade(kept.made, message)) return kept.json;
  const json = JSON.stringify(message);
  keptMessages.set(message, { made: madeOf(message), json });
  return json;
}

/**
 * What a message is made of (the fields a request message has, and each tool call's): a message whose values are
 * all the same (`===`) as when something was derived from it gives the same result again.
 */
export interface MadeOf {
  role: string;
  content: unknown;
  toolCallId: unknown;
  toolCalls: unknown;
  /** Each tool call, its id, type, function, name and arguments, in order. */
  calls: unknown[];
}

export function madeOf(message: RequestMessage): MadeOf {
  const toolCalls = "tool_calls" in message ? message.tool_calls : undefined;
  const calls: unknown[] = [];
  for (const call of toolCalls ?? [])
    calls.push(call, call.id, call.type, call.function, call.function.name, call.function.arguments);
  return {
    role: message.role,
    content: message.content,
    toolCallId: "tool_call_id" in message ? message.tool_call_id : undefined,
    toolCalls,
    calls,
  };
}

/** True when `message` holds the values it was made of (compared without building anything). */
export function sameAsMade(made: MadeOf, message: RequestMessage): boolean {
  if (made.role !== message.role || made.content !== message.content) return false;
  if (made.toolCallId !== ("tool_call_id" in message ? message.tool_call_id : undefined)) return false;
  const toolCalls = "tool_calls" in message ? message.tool_calls : undefined;
  if (made.toolCalls !== toolCalls) return false;
  if (!toolCalls) return made.calls.length === 0;
  if (made.calls.length !== toolCalls.length * 6) return false;
  let at = 0;
  for (const call of toolCalls) {
    if (
      made.calls[at] !== call ||
      made.calls[at + 1] !== call.id ||
      made.calls[at + 2] !== call.type ||
      made.calls[at + 3] !== call.function ||
      made.calls[at + 4] !== call.function.name ||
      made.calls[at + 5] !== call.function.arguments
    )
      return false;
    at += 6;
  }
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
