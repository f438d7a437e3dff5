import type { ChatModel, CompletionRequest, RequestMessage } from "./types.js";

/** The one method of the Redactor this needs (src/log/redact.ts). */
export interface TextRedactor {
  redact(text: string): string;
}

/** Each text redacted, for requests that send plain texts (embeddings). */
export function redactTexts(texts: readonly string[], redactor: TextRedactor): string[] {
  return texts.map((text) => redactor.redact(text));
}

function redactMessage(message: RequestMessage, redactor: TextRedactor): RequestMessage {
  if (Array.isArray(message.content)) {
    return {
      role: "user",
      content: message.content.map((part) =>
        part.type === "text" ? { type: "text" as const, text: redactor.redact(part.text) } : part,
      ),
    };
  }
  if (message.role === "assistant") {
    return {
      ...message,
      content: message.content === null ? null : redactor.redact(message.content),
      ...(message.tool_calls
        ? {
            tool_calls: message.tool_calls.map((call) => ({
              ...call,
              function: { ...call.function, arguments: redactor.redact(call.function.arguments) },
            })),
          }
        : {}),
    };
  }
  return { ...message, content: redactor.redact(message.content as string) } as RequestMessage;
}

/**
 * Redacts every message before it leaves for the provider (DESIGN.md: secrets never appear in LLM requests).
 * Tool results are redacted already; this also covers what a user typed, recalled memories and summaries.
 */
export function redactingModel(model: ChatModel, redactor: TextRedactor): ChatModel {
  return {
    complete: (request: CompletionRequest, options) =>
      model.complete(
        { ...request, messages: request.messages.map((message) => redactMessage(message, redactor)) },
        options,
      ),
    ...(model.warm ? { warm: () => model.warm!() } : {}),
  };
}
