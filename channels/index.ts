import type { MagpieConfig } from "../src/config/schema.js";
import type { ChannelAdapter } from "../src/core/types.js";
import type { ChannelDeps } from "./channel-deps.js";

export type { ChannelDeps };

/** Which chat channels are on: `channels.<name>.enabled`, or by default whether its token is present. */
export function enabledChatChannels(config: MagpieConfig): Array<"telegram" | "discord" | "slack"> {
  const { telegram, discord, slack } = config.channels;
  const enabled: Array<"telegram" | "discord" | "slack"> = [];
  if (telegram.enabled ?? Boolean(telegram.token)) enabled.push("telegram");
  if (discord.enabled ?? Boolean(discord.token)) enabled.push("discord");
  if (slack.enabled ?? Boolean(slack.botToken)) enabled.push("slack");
  return enabled;
}

/**
 * Creates the chat-platform adapters enabled in config (Telegram, Discord, Slack). Each library is
 * imported only when its channel is enabled, so start-up stays lean. The console channel is separate.
 */
export async function loadChatChannels(deps: ChannelDeps): Promise<ChannelAdapter[]> {
  const adapters: ChannelAdapter[] = [];
  for (const name of enabledChatChannels(deps.config)) {
    const logger = deps.logger.child({ channel: name });
    const channelDeps = { ...deps, logger };
    switch (name) {
      case "telegram":
        adapters.push((await import("./telegram.js")).createTelegramChannel(channelDeps));
        break;
      case "discord":
        adapters.push((await import("./discord.js")).createDiscordChannel(channelDeps));
        break;
      case "slack":
        adapters.push((await import("./slack.js")).createSlackChannel(channelDeps));
        break;
    }
  }
  return adapters;
}
