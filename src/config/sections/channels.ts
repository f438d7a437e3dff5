import { z } from "zod";
import { idListSchema } from "./common.js";

/** Access keys every chat channel takes (DESIGN.md "Access control"). */
const accessKeys = {
  enabled: z.boolean().optional(),
  dmPolicy: z.enum(["pairing", "allowlist", "open", "disabled"]).default("pairing"),
  allowFrom: idListSchema("user ids").default([]),
  groupPolicy: z.enum(["allowlist", "open", "disabled"]).default("allowlist"),
  groups: idListSchema("chat ids").default([]),
  requireMention: z.boolean().default(true),
  /** Outbound pacing within the platform's published limits; false for benchmarks against fakes. */
  pacing: z.boolean().default(true),
};

export const telegramSchema = z.strictObject({
  ...accessKeys,
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

export const discordSchema = z.strictObject({
  ...accessKeys,
  token: z.string().min(1).optional(),
  apiBase: z.string().url().optional(),
});

export const slackSchema = z.strictObject({
  ...accessKeys,
  botToken: z.string().min(1).optional(),
  appToken: z.string().min(1).optional(),
  signingSecret: z.string().min(1).optional(),
  apiUrl: z.string().url().optional(),
});

export const consoleSchema = z.strictObject({
  enabled: z.boolean().optional(),
});

export const channelsSchema = z
  .strictObject({
    telegram: telegramSchema.prefault({}),
    discord: discordSchema.prefault({}),
    slack: slackSchema.prefault({}),
    console: consoleSchema.prefault({}),
  })
  .prefault({});

export type TelegramConfig = z.infer<typeof telegramSchema>;
export type DiscordConfig = z.infer<typeof discordSchema>;
export type SlackConfig = z.infer<typeof slackSchema>;
export type ChannelAccessConfig = Pick<
  TelegramConfig,
  "dmPolicy" | "allowFrom" | "groupPolicy" | "groups" | "requireMention"
>;
