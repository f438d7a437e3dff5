import { CHANNEL_ENTRIES } from "../../channels/catalog.js";

/** Environment variables that fill config keys when the file leaves them unset (env-only mode). */
export const ENV_FALLBACKS: ReadonlyArray<{ env: string; path: string[]; number?: boolean }> = [
  { env: "OPENAI_API_KEY", path: ["llm", "apiKey"] },
  { env: "OPENAI_BASE_URL", path: ["llm", "baseUrl"] },
  { env: "MAGPIE_MODEL", path: ["llm", "model"] },
  { env: "MAGPIE_EMBEDDING_MODEL", path: ["llm", "embeddingModel"] },
  ...CHANNEL_ENTRIES.flatMap((entry) =>
    entry.env.map(({ env, key }) => ({ env, path: ["channels", entry.name, ...key.split(".")] })),
  ),
  { env: "PUSHOVER_TOKEN", path: ["notify", "pushover", "token"] },
  { env: "PUSHOVER_USER_KEY", path: ["notify", "pushover", "user"] },
  { env: "NTFY_URL", path: ["notify", "ntfy", "url"] },
  { env: "NTFY_TOPIC", path: ["notify", "ntfy", "topic"] },
  { env: "NTFY_TOKEN", path: ["notify", "ntfy", "token"] },
  { env: "BRAVE_API_KEY", path: ["tools", "web", "braveApiKey"] },
  { env: "COMPOSIO_API_KEY", path: ["composio", "apiKey"] },
  { env: "MAGPIE_DATA_DIR", path: ["dataDir"] },
  { env: "MAGPIE_HTTP_HOST", path: ["http", "host"] },
  { env: "MAGPIE_HTTP_PORT", path: ["http", "port"], number: true },
  { env: "MAGPIE_DASHBOARD_TOKEN", path: ["http", "dashboard", "token"] },
  { env: "MAGPIE_METRICS_TOKEN", path: ["http", "metrics", "token"] },
];

/** Config keys whose values are secrets: redacted from logs, tool output and LLM requests. `*`: every item. */
export const SECRET_PATHS: ReadonlyArray<string[]> = [
  ["llm", "apiKey"],
  ["llm", "fallbacks", "*", "apiKey"],
  ...CHANNEL_ENTRIES.flatMap((entry) =>
    entry.secrets.map((key) => ["channels", entry.name, ...key.split(".")]),
  ),
  ["notify", "pushover", "token"],
  ["notify", "pushover", "user"],
  ["notify", "ntfy", "token"],
  ["tools", "web", "braveApiKey"],
  ["composio", "apiKey"],
  ["http", "dashboard", "token"],
  ["http", "metrics", "token"],
];
