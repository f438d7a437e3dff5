/** Class names along an error's prototype chain — lets us classify openai errors without loading the SDK. */
function classNames(error: unknown): Set<string> {
  const names = new Set<string>();
  let proto = error && typeof error === "object" ? Object.getPrototypeOf(error) : null;
  while (proto && proto !== Object.prototype) {
    names.add(proto.constructor?.name);
    proto = Object.getPrototypeOf(proto);
  }
  return names;
}

export interface LlmFailure {
  code: string;
  /** Short, clear text for the user. */
  userMessage: string;
  status?: number;
}

/** Maps an LLM error (401, 404, 429, 5xx, timeout, unreachable …) to a short reply and a code for the log. */
export function describeLlmError(
  error: unknown,
  context: { baseUrl?: string; model: string; timeoutMs: number },
): LlmFailure {
  const where = context.baseUrl ?? "https://api.openai.com/v1";
  const kinds = classNames(error);
  if (kinds.has("APIConnectionTimeoutError")) {
    return {
      code: "llm.timeout",
      userMessage: `The language model did not answer within ${context.timeoutMs >= 1000 ? `${Math.round(context.timeoutMs / 100) / 10} s` : `${context.timeoutMs} ms`} (llm.timeoutMs). Please try again.`,
    };
  }
  if (kinds.has("APIConnectionError")) {
    return {
      code: "llm.unreachable",
      userMessage: `I couldn't reach the language model at ${where}. Check that it is running and that llm.baseUrl / OPENAI_BASE_URL is right.`,
    };
  }
  if (kinds.has("APIError")) {
    const apiError = error as { status?: number; message: string };
    const status = apiError.status;
    if (status === 401 || status === 403) {
      return {
        code: "llm.auth",
        status,
        userMessage: `The language model provider rejected the API key (${status}). Check OPENAI_API_KEY or llm.apiKey.`,
      };
    }
    if (status === 404) {
      return {
        code: "llm.not_found",
        status,
        userMessage: `The model "${context.model}" was not found at ${where} (404). Check MAGPIE_MODEL or llm.model.`,
      };
    }
    if (status === 429) {
      return {
        code: "llm.rate_limited",
        status,
        userMessage:
          "The language model provider is rate-limiting or out of quota (429). Please try again in a minute.",
      };
    }
    if (status !== undefined && status >= 500) {
      return {
        code: "llm.server_error",
        status,
        userMessage: `The language model provider had an internal error (HTTP ${status}). Please try again shortly.`,
      };
    }
    if (status === 400) {
      return {
        code: "llm.bad_request",
        status,
        userMessage: `The language model provider refused the request (400): ${firstLine(apiError.message)}`,
      };
    }
    return {
      code: "llm.error",
      status,
      userMessage: `The language model provider returned an error${status ? ` (HTTP ${status})` : ""}: ${firstLine(apiError.message)}`,
    };
  }
  return {
    code: "llm.error",
    userMessage: `Something went wrong talking to the language model: ${firstLine(error instanceof Error ? error.message : String(error))}`,
  };
}

function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
