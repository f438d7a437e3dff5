import type { MagpieConfig } from "../src/config/schema.js";
import type { ChannelAdapter } from "../src/core/types.js";
import { enabledChannelEntries } from "./catalog.js";
import type { ChannelDeps } from "./channel-deps.js";

export type { ChannelDeps };

/** Which chat channels are on: `channels.<name>.enabled`, or by default whether its credentials are present. */
export function enabledChatChannels(config: MagpieConfig): string[] {
  return enabledChannelEntries(config).map((entry) => entry.name);
}

/**
 * Creates the chat-platform adapters enabled in config, from the channel catalog. Each library is imported
 * only when its channel is enabled, so start-up stays lean. The console channel is separate.
 */
export async function loadChatChannels(deps: ChannelDeps): Promise<ChannelAdapter[]> {
  const adapters: ChannelAdapter[] = [];
  for (const entry of enabledChannelEntries(deps.config)) {
    const logger = deps.logger.child({ channel: entry.name });
    adapters.push(await entry.create({ ...deps, logger }));
  }
  return adapters;
}
