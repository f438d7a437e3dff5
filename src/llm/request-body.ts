import { frozenRun, sameFrozenPrefix } from "./frozen-message.js";
import type { CompletionRequest, LlmToolSpec, RequestMessage } from "./types.js";

const UTF8 = new TextEncoder();
const COMMA = UTF8.encode(",");
const CLOSE = UTF8.encode("]");
const PLAIN_END = UTF8.encode(',"stream":false}');
const STREAM_END = UTF8.encode(',"stream":true,"stream_options":{"include_usage":true}}');

/**
 * The bytes of a chat-completions request, made of each message's and tool's UTF-8 JSON kept between requests (issue
 * 35, hot path). Every LLM call of a turn sends the system prompt, the chat's history and the tools again, and every
 * turn sends the same history; the SDK encoded all of it again for each call (`JSON.stringify` of the whole body,
 * then its conversion to UTF-8), in CPU and garbage that grew with the history. Here a message's bytes are kept by
 * the message object (history messages and a turn's own messages are the same objects from one request to the next,
 * see `HistoryRepository.newest` and `redactingModel`) together with the values they were made from: a message
 * changed in place since is encoded afresh. Kept as bytes, not text: a body joined from kept strings is a string V8
 * must flatten and convert whole — 0.27 ms per request of 40 KB in the running bot, more than the rest of the body's
 * making. `JSON.stringify` escapes lone surrogates, so each part is well-formed and the parts' bytes joined are the
 * whole text's. The result is byte for byte the UTF-8 of `JSON.stringify` of the body the SDK would build (same
 * keys, same order).
 */
export function chatRequestBytes(request: CompletionRequest, stream: boolean): Buffer {
  const { messages } = request;
  const head = UTF8.encode(`{"model":${JSON.stringify(request.model)},"messages":[`);
  const parts: Uint8Array[] = [head];
  // The frozen messages this request starts with that the conversation's last request started with too: their
  // bytes are one piece of that request's body (the turn's earlier steps), found without a lookup per message.
  const run = messages.length > 0 ? keptRuns.get(messages[0]!) : undefined;
  const reused = run ? sameFrozenPrefix(messages, run.messages, run.ends.length) : 0;
  const ends: number[] = run ? run.ends.slice(0, reused) : [];
  let length = reused > 0 ? ends[reused - 1]! : 0;
  if (reused > 0) parts.push(run!.bytes.subarray(0, length));
  for (let index = reused; index < messages.length; index++) {
    if (index > 0) {
      parts.push(COMMA);
      length += COMMA.length;
    }
    const bytes = messageBytes(messages[index]!);
    parts.push(bytes);
    length += bytes.length;
    ends.push(length);
  }
  parts.push(CLOSE);
  if (request.tools?.length) {
    parts.push(UTF8.encode(',"tools":['));
    request.tools.forEach((tool, index) => {
      if (index > 0) parts.push(COMMA);
      parts.push(toolBytes(tool));
    });
    parts.push(CLOSE);
  }
  if (request.temperature !== undefined)
    parts.push(UTF8.encode(`,"temperature":${JSON.stringify(request.temperature)}`));
  parts.push(stream ? STREAM_END : PLAIN_END);
  const body = Buffer.concat(parts);
  const frozen = frozenRun(messages, reused);
  if (frozen > 0) {
    keptRuns.set(messages[0]!, {
      messages: messages.slice(0, frozen),
      ends: ends.slice(0, frozen),
      bytes: body.subarray(head.length, head.length + ends[frozen - 1]!),
    });
  }
  return body;
}

/**
 * The last request of each conversation, by its first message (a turn's system prompt): its leading frozen messages
 * (`src/llm/frozen-message.ts`), where each one's bytes end in `bytes` (its comma before it included), and those
 * bytes — a view of that request's body, which is never changed once made.
 */
const keptRuns = new WeakMap<
  object,
  { messages: readonly RequestMessage[]; ends: readonly number[]; bytes: Buffer }
>();

const keptMessages = new WeakMap<object, { made: MadeOf; bytes: Uint8Array }>();

function messageBytes(message: RequestMessage): Uint8Array {
  // Parts (a photo's data URL) are sent for one turn only: not worth keeping.
  if (Array.isArray(message.content)) return UTF8.encode(JSON.stringify(message));
  const kept = keptMessages.get(message);
  if (kept && sameAsMade(kept.made, message)) return kept.bytes;
  const bytes = UTF8.encode(JSON.stringify(message));
  keptMessages.set(message, { made: madeOf(message), bytes });
  return bytes;
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

/** A tool's bytes, kept by the spec object (the registry builds each tool's spec once) and its parts. */
const keptTools = new WeakMap<
  object,
  { name: string; description: string; parameters: object; bytes: Uint8Array }
>();

function toolBytes(tool: LlmToolSpec): Uint8Array {
  const { name, description, parameters } = tool.function;
  const kept = keptTools.get(tool);
  if (kept && kept.name === name && kept.description === description && kept.parameters === parameters)
    return kept.bytes;
  const bytes = UTF8.encode(JSON.stringify(tool));
  keptTools.set(tool, { name, description, parameters, bytes });
  return bytes;
}
