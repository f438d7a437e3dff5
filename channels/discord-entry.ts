import { z } from "zod";
import { channelAccessKeys } from "../src/config/sections/channel-access.js";
import { credentialCheck, defineChannel } from "./channel-entry.js";
import { livenessLimit } from "./liveness.js";

const MB = 1024 * 1024;

/** `channels.discord`: the bot token and the REST base for tests (`https://discord.com/api`, without version). */
export const discordSchema = z.strictObject({
  ...channelAccessKeys,
  token: z.string().min(1).optional(),
  apiBase: z.string().url().optional(),
});

/** Discord in the channel catalog. */
export const discordChannel = defineChannel({
  name: "discord",
  label: "Discord",
  schema: discordSchema,
  env: [{ env: "DISCORD_BOT_TOKEN", key: "token" }],
  secrets: ["token"],
  // 25 MB without server boosts.
  uploads: { photo: 25 * MB, document: 25 * MB },
  pairing: true,
  buttons: true,
  edits: true,
  restartOverlap: true,
  // The gateway's heartbeat (Discord asks for one every ~41 s) is acked each time; discord.js drops a connection
  // that misses one ack, so two heartbeats and a reconnect's worth of margin is down. Discord sets the pace, so a
  // silentAfterSecs below ~90 s would call a healthy quiet connection down.
  liveness: (section) => livenessLimit(section, 120),
  isEnabled: (section) => section.enabled ?? Boolean(section.token),
  doctor: async (section, probe) => [
    await credentialCheck("discord", "DISCORD_BOT_TOKEN or channels.discord.token", async () => {
      const base = (section.apiBase ?? "https://discord.com/api").replace(/\/$/, "");
      const { status, body } = await probe(`${base}/v10/users/@me`, {
        headers: { authorization: `Bot ${section.token}` },
      });
      return status === 200 ? `authorized as ${(body as { username?: string }).username}` : { status };
    }),
  ],
  create: async (deps) => (await import("./discord.js")).createDiscordChannel(deps),
});
