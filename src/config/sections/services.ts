import { z } from "zod";
import { positiveInt } from "./common.js";

export const httpSchema = z
  .strictObject({
    host: z.string().min(1).default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8787),
    /** `/healthz` answers 503 while the event loop is blocked longer than this (and as long again after). */
    maxEventLoopBlockMs: z.number().int().min(100).max(600_000).default(5_000),
    /** The web dashboard and webchat on the same port (off by default); see docs/dashboard.md. */
    dashboard: z
      .strictObject({
        enabled: z.boolean().default(false),
        /** Signs a browser in (`/?token=`) or a script (`Authorization: Bearer`); MAGPIE_DASHBOARD_TOKEN. */
        token: z.string().min(16, "use at least 16 characters (e.g. `openssl rand -hex 24`)").optional(),
      })
      .prefault({})
      .superRefine((dashboard, context) => {
        if (dashboard.enabled && !dashboard.token) {
          context.addIssue({
            code: "custom",
            path: ["token"],
            message:
              "the dashboard is enabled without a token — set http.dashboard.token or MAGPIE_DASHBOARD_TOKEN (e.g. `openssl rand -hex 24`)",
          });
        }
      }),
    /**
     * `GET /metrics` in Prometheus text (off by default; see docs/operations.md → Metrics). Without a token only loopback
     * clients are served; with one, every client must send `Authorization: Bearer <token>` (MAGPIE_METRICS_TOKEN).
     */
    metrics: z
      .strictObject({
        enabled: z.boolean().default(false),
        token: z.string().min(16, "use at least 16 characters (e.g. `openssl rand -hex 24`)").optional(),
      })
      .prefault({}),
  })
  .prefault({});

export const llmSchema = z
  .strictObject({
    baseUrl: z.string().url().optional(),
    apiKey: z.string().min(1).optional(),
    model: z.string().min(1).default("gpt-4o-mini"),
    embeddingModel: z.string().min(1).optional(),
    timeoutMs: positiveInt.default(60_000),
    maxRetries: z.number().int().min(0).max(10).default(2),
    /** Tried in order when the model before fails with a retryable error; baseUrl/apiKey default to llm's. */
    fallbacks: z
      .array(
        z.strictObject({
          model: z.string().min(1),
          baseUrl: z.string().url().optional(),
          apiKey: z.string().min(1).optional(),
        }),
      )
      .default([]),
    /** How long an entry that answered 401/403 is skipped. */
    cooldownSecs: positiveInt.default(300),
    /** USD per million tokens, per model name, for the usage ledger's cost column and USD budgets. */
    prices: z
      .record(z.string().min(1), z.strictObject({ input: z.number().min(0), output: z.number().min(0) }))
      .default({}),
    /** Also accept tool calls written in the answer text (<tool_call>{…}</tool_call> or fenced JSON). */
    textToolCalls: z.boolean().default(false),
    /** How tool schemas are cleaned for the provider; `auto` picks from baseUrl (see src/tools/schema-dialect.ts). */
    schemaDialect: z.enum(["auto", "openai", "anthropic", "gemini", "conservative"]).default("auto"),
    /** Photos reach the model as image parts: auto (send, fall back to text on a refusal), true, false. */
    vision: z.union([z.literal("auto"), z.boolean()]).default("auto"),
    /** Voice notes and audio files are transcribed with this model (OpenAI-compatible /audio/transcriptions). */
    transcriptionModel: z.string().min(1).optional(),
  })
  .prefault({});

const capSchema = z
  .strictObject({
    tokens: positiveInt.optional(),
    usd: z.number().positive().optional(),
  })
  .refine((cap) => cap.tokens !== undefined || cap.usd !== undefined, {
    message: "give tokens, usd or both",
  });

/** Hard spending caps, checked before every LLM call. `daily` and `perChat` are per day in `timezone`. */
export const budgetsSchema = z
  .strictObject({
    daily: capSchema.optional(),
    perChat: capSchema.optional(),
    perJobRun: capSchema.optional(),
    perTurn: capSchema.optional(),
  })
  .prefault({});

export const notifySchema = z
  .strictObject({
    pushover: z
      .strictObject({
        token: z.string().min(1).optional(),
        user: z.string().min(1).optional(),
        /** HTTP proxy as http://host:port. */
        proxy: z.string().url().optional(),
      })
      .prefault({}),
    /** ntfy push: a self-hosted server or https://ntfy.sh, the topic the owner's phone subscribes to. */
    ntfy: z
      .strictObject({
        url: z
          .string()
          .url()
          .refine((url) => /^https?:\/\//.test(url), "url must be an http:// or https:// server")
          .optional(),
        topic: z
          .string()
          .regex(/^[-_A-Za-z0-9]{1,64}$/, "topic: 1–64 letters, digits, - or _ (as ntfy allows)")
          .optional(),
        /** Access token (`tk_…`) for a protected topic. */
        token: z.string().min(1).optional(),
      })
      .prefault({}),
  })
  .prefault({});

/** The scheduler's section lives in its own file. */
export { cronSchema } from "./cron.js";
/** So does hardware's. */
export { hardwareSchema } from "./hardware.js";

export { positiveInt };
