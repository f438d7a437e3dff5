import type { Logger } from "pino";
import { describeLlmError } from "../llm/errors.js";
import type { ChatMessage, ChatModel } from "../llm/types.js";
import type { AgentProfile } from "./agents.js";
import type { ToolCallContext, ToolRuntime } from "./tool-runtime.js";

export interface AgentLoopDeps {
  model: ChatModel;
  tools: ToolRuntime;
  logger: Logger;
  maxIterations: number;
  /** For user-facing LLM error messages. */
  llm: { baseUrl?: string; timeoutMs: number };
}

export interface TurnInput {
  agent: AgentProfile;
  systemPrompt: string;
  history: ChatMessage[];
  userText: string;
  toolNames: string[];
  context: ToolCallContext;
  onTextDelta?: (delta: string) => void;
}

export type TurnStatus = "ok" | "error" | "aborted" | "max_iterations";

export interface TurnOutcome {
  status: TurnStatus;
  /** The reply for the user (the final answer, or a short error explanation). */
  reply: string;
  /** Messages to persist in history: the user message, tool rounds and the final answer. */
  newMessages: ChatMessage[];
  iterations: number;
  toolCalls: number;
  errorCode?: string;
}

/**
 * One agent turn: system prompt + history + user text → LLM → tool calls … until a final answer or
 * `maxIterations`. Never throws: LLM failures become a short reply, tool failures go back to the model.
 */
export async function runAgentTurn(deps: AgentLoopDeps, input: TurnInput): Promise<TurnOutcome> {
  const { signal } = input.context;
  const userMessage: ChatMessage = { role: "user", content: input.userText };
  const newMessages: ChatMessage[] = [userMessage];
  const specs = deps.tools.specs(input.toolNames);
  let toolCalls = 0;

  for (let iteration = 1; iteration <= deps.maxIterations; iteration++) {
    if (signal.aborted) return aborted(userMessage, iteration - 1, toolCalls);
    let result: Awaited<ReturnType<ChatModel["complete"]>>;
    try {
      result = await deps.model.complete(
        {
          model: input.agent.model,
          messages: [{ role: "system", content: input.systemPrompt }, ...input.history, ...newMessages],
          tools: specs.length > 0 ? specs : undefined,
        },
        { signal, onTextDelta: input.onTextDelta },
      );
    } catch (error) {
      if (signal.aborted) return aborted(userMessage, iteration - 1, toolCalls);
      const failure = describeLlmError(error, { ...deps.llm, model: input.agent.model });
      deps.logger.warn(
        { code: failure.code, status: failure.status, err: error, session: input.context.sessionKey },
        "llm-call-failed",
      );
      return {
        status: "error",
        reply: failure.userMessage,
        newMessages: [userMessage],
        iterations: iteration,
        toolCalls,
        errorCode: failure.code,
      };
    }

    if (result.toolCalls.length === 0) {
      const reply = result.content?.trim() || "(The model returned an empty answer.)";
      newMessages.push({ role: "assistant", content: reply });
      return { status: "ok", reply, newMessages, iterations: iteration, toolCalls };
    }

    newMessages.push({ role: "assistant", content: result.content, tool_calls: result.toolCalls });
    for (const call of result.toolCalls) {
      toolCalls++;
      const output = signal.aborted
        ? JSON.stringify({ ok: false, error: { code: "tool.aborted", message: "The turn was stopped." } })
        : await deps.tools.execute(call, input.toolNames, input.context);
      newMessages.push({ role: "tool", tool_call_id: call.id, content: output });
    }
    if (signal.aborted) return aborted(userMessage, iteration, toolCalls);
  }

  const reply = `I stopped after ${deps.maxIterations} steps (agent.maxIterations) without reaching a final answer. Tell me how to continue, or narrow the request.`;
  newMessages.push({ role: "assistant", content: reply });
  return { status: "max_iterations", reply, newMessages, iterations: deps.maxIterations, toolCalls };
}

function aborted(userMessage: ChatMessage, iterations: number, toolCalls: number): TurnOutcome {
  return {
    status: "aborted",
    reply: "Stopped.",
    // Keep the request in history but drop half-finished tool rounds (they would be invalid next time).
    newMessages: [
      userMessage,
      { role: "assistant", content: "(This request was stopped before it finished.)" },
    ],
    iterations,
    toolCalls,
  };
}
