import type OpenAI from "openai";
import type { Stream } from "openai/core/streaming";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { chatRequestBytes } from "./request-body.js";
import type { ChatModel, CompletionOptions, CompletionRequest, CompletionResult, ToolCall } from "./types.js";

/** The chain retries (src/llm/backoff.ts says why not the SDK): each chat request asks the SDK for none. */
const CHAT_REQUEST = { maxRetries: 0 } as const;
const COMPLETIONS = "/chat/completions";

/**
 * ChatModel over any OpenAI-compatible chat-completions endpoint (OpenAI, OpenRouter, Ollama, llama.cpp, vLLM), on
 * the endpoint provider's client (src/llm/provider.ts).
 */
export class OpenAiChatModel implements ChatModel {
  constructor(readonly client: OpenAI) {}

  async complete(request: CompletionRequest, options: CompletionOptions = {}): Promise<CompletionResult> {
    const stream = options.onTextDelta !== undefined;
    // The body is encoded here, from the bytes kept for each message (src/llm/request-body.ts), and handed to the
    // SDK as bytes, which it sends as they are; the SDK's `chat.completions.create` is the same POST with the
    // body encoded by `JSON.stringify` afresh.
    const post = {
      ...CHAT_REQUEST,
      body: chatRequestBytes(request, stream),
      headers: { "content-type": "application/json" },
      stream,
      signal: options.signal,
    };
    if (!options.onTextDelta) {
      const completion = await this.client.post<OpenAI.ChatCompletion>(COMPLETIONS, post);
      const choice = completion.choices[0];
      const toolCalls = (choice?.message.tool_calls ?? []).flatMap((call) =>
        call.type === "function"
          ? [
              {
                id: call.id,
                type: "function" as const,
                function: { name: call.function.name, arguments: call.function.arguments },
              },
            ]
          : [],
      );
      return {
        content: choice?.message.content ?? null,
        toolCalls,
        finishReason: choice?.finish_reason ?? null,
        usage: completion.usage
          ? {
              promptTokens: completion.usage.prompt_tokens,
              completionTokens: completion.usage.completion_tokens,
            }
          : undefined,
      };
    }
    // The last chunk carries `usage` (`stream_options.include_usage`; servers that ignore it send none: the ledger
    // estimates).
    const chunks = await this.client.post<Stream<ChatCompletionChunk>>(COMPLETIONS, post);
    return accumulate(chunks, options.onTextDelta);
  }
}

/** Reassembles a streamed completion: text deltas are forwarded, tool-call fragments joined by index. */
async function accumulate(
  stream: AsyncIterable<ChatCompletionChunk>,
  onTextDelta: (delta: string) => void,
): Promise<CompletionResult> {
  let content = "";
  let finishReason: string | null = null;
  const calls: ToolCall[] = [];
  let usage: CompletionResult["usage"];
  for await (const chunk of stream) {
    if (chunk.usage) {
      usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens };
    }
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const delta = choice.delta ?? {};
    if (delta.content) {
      content += delta.content;
      onTextDelta(delta.content);
    }
    for (const fragment of delta.tool_calls ?? []) {
      let call = calls[fragment.index];
      if (!call) {
        call = { id: "", type: "function", function: { name: "", arguments: "" } };
        calls[fragment.index] = call;
      }
      if (fragment.id) call.id = fragment.id;
      if (fragment.function?.name) call.function.name += fragment.function.name;
      if (fragment.function?.arguments) call.function.arguments += fragment.function.arguments;
    }
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  return { content: content || null, toolCalls: calls.filter(Boolean), finishReason, usage };
}
