import { z } from "zod";
import { channelAccessKeys } from "../src/config/sections/channel-access.js";
import { credentialCheck, defineChannel } from "./channel-entry.js";
import { livenessLimit } from "./liveness.js";

const MB = 1024 * 1024;

/** `channels.telegram`: the bot token, long polling or a webhook, and the Bot API root for tests. */
export const telegramSchema = z.strictObject({
  ...channelAccessKeys,
  token: z.string().min(1).optional(),
  apiRoot: z
    .string()
    .url()
    .refine((url) => !url.endsWith("/"), "apiRoot must not end with '/' (grammY requires it)")
    .optional(),
  mode: z.enum(["polling", "webhook"]).default("polling"),
  webhookSecret: z.string().min(1).optional(),
  /** Public URL Telegram should call in webhook mode (https://host/telegram/webhook). */
  webhookUrl: z.string().url().optional(),
});

/** How long Telegram holds one getUpdates long poll (grammY's default). */
export const TELEGRAM_LONG_POLL_SECS = 30;

/** Telegram in the channel catalog. */
export const telegramChannel = defineChannel({
  name: "telegram",
  label: "Telegram",
  schema: telegramSchema,
  env: [{ env: "TELEGRAM_BOT_TOKEN", key: "token" }],
  secrets: ["token", "webhookSecret"],
  // The Bot API caps uploads at 10 MB for photos and 50 MB for documents.
  uploads: { photo: 10 * MB, document: 50 * MB },
  pairing: true,
  buttons: true,
  edits: true,
  // A long poll returns within its timeout even when nothing arrives: silent past it plus a margin is down.
  liveness: (section) =>
    section.mode === "webhook" ? null : livenessLimit(section, TELEGRAM_LONG_POLL_SECS + 15),
  isEnabled: (section) => section.enabled ?? Boolean(section.token),
  configProblems: (section) =>
    section.mode === "webhook" && !section.webhookSecret
      ? [
          "channels.telegram.webhookSecret: required when mode is webhook — set a random string so forged updates are refused.",
        ]
      : [],
  doctor: async (section, probe) => [
    await credentialCheck("telegram", "TELEGRAM_BOT_TOKEN or channels.telegram.token", async () => {
      const root = section.apiRoot ?? "https://api.telegram.org";
      const { status, body } = await probe(`${root}/bot${section.token}/getMe`, { method: "POST" });
      const result = (body as { result?: { username?: string } }).result;
      return status === 200 ? `authorized as @${result?.username}` : { status };
    }),
  ],
  create: async (deps) => (await import("./telegram.js")).createTelegramChannel(deps),
});
