import type { CallScope } from "./llm-call.js";

/** Chat messages in the OpenAI chat-completions shape (the subset Magpie stores and sends). */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A tool as the LLM sees it. */
export interface LlmToolSpec {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** A user message with content parts (text and images): sent for the current turn only, never stored. */
export interface UserPartsMessage {
  role: "user";
  content: Array<{ type: "text"; text: string } | { type: "image_url"; image_url: { url: string } }>;
}

/** What a request may carry: history messages, and the current user message with image parts. */
export type RequestMessage = ChatMessage | UserPartsMessage;

export interface CompletionRequest {
  model: string;
  messages: RequestMessage[];
  tools?: LlmToolSpec[];
  temperature?: number;
}

export interface CompletionResult {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage?: { promptTokens: number; completionTokens: number };
  /** The model that answered, when a model chain moved past the requested one (a fallback). */
  answeredBy?: { model: string; fallback: boolean };
}

export interface CompletionOptions {
  signal?: AbortSignal;
  /** When given, the request streams and text deltas arrive here as they come. */
  onTextDelta?: (delta: string) => void;
  /** Who the call is for: the provider files its ledger row under it (src/llm/provider.ts → `CallMeter`). */
  scope?: CallScope;
}

/** What the agent loop needs from an LLM provider. */
export interface ChatModel {
  complete(request: CompletionRequest, options?: CompletionOptions): Promise<CompletionResult>;
  /** Loads and builds what the first request needs (the SDK, the client) without sending anything. */
  warm?(): Promise<void>;
}
