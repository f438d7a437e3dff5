/** Reply to free text when no LLM is configured. */
export const NO_LLM_REPLY =
  "No language model is configured yet, so I can only run slash commands (try /help).\n\n" +
  "To chat, set OPENAI_API_KEY (and OPENAI_BASE_URL and MAGPIE_MODEL for other OpenAI-compatible providers such as " +
  "OpenRouter, Ollama or llama.cpp) in .env, or llm.apiKey / llm.baseUrl / llm.model in config/magpie.yaml, then restart.";

export const INTERRUPTED_REPLY =
  "Your previous message was interrupted by a restart before I finished answering it, so its turn was cut off. " +
  "Send it again if you still need it.";
