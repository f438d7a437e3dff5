import { features } from "../../src/app/features.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp, type TestAppOptions } from "./harness.js";

export interface TelegramApp {
  telegram: FakeTelegram;
  testApp: TestApp;
  /** Stops the app (keeping its data when asked) and the fake. */
  stop(options?: { keepData?: boolean; keepLlm?: boolean }): Promise<void>;
}

/**
 * A whole Magpie (every feature) on the Telegram fake through the real grammY client, with a scripted LLM:
 * `access` becomes `channels.telegram` (allowFrom, groups …), `config` the rest. Pass `telegram` to reuse a fake
 * across a restart.
 */
export async function startTelegramApp(options: {
  access?: Record<string, unknown>;
  config?: ConfigInput;
  telegram?: FakeTelegram;
  app?: Omit<TestAppOptions, "config">;
}): Promise<TelegramApp> {
  const telegram = options.telegram ?? (await new FakeTelegram().start());
  const config = (options.config ?? {}) as Record<string, unknown>;
  const testApp = await startTestApp({
    features,
    loadChannels: true,
    channel: null,
    ...options.app,
    config: {
      ...config,
      channels: {
        telegram: {
          token: telegram.validToken,
          apiRoot: telegram.apiRoot,
          pacing: false,
          ...options.access,
        },
      },
    } as ConfigInput,
  });
  return {
    telegram,
    testApp,
    async stop(stopOptions) {
      await testApp.stop(stopOptions);
      if (!options.telegram) await telegram.close();
    },
  };
}
