import type { Logger } from "pino";
import {
  type ConfigChange,
  diffConfig,
  isRestartOnly,
  withRestartOnlyKept,
} from "../config/config-change.js";
import { deepFreeze, type LiveSource } from "../config/live.js";
import type { MagpieConfig } from "../config/schema.js";
import type { AgentDirectory } from "../core/agents.js";
import { createRedactor, type Redactor } from "../log/redact.js";
import { type ChannelReloadDeps, reloadChannels } from "./channel-reload.js";
import type { FeatureDeps, MagpieFeature } from "./feature.js";

/** What a reload did: applied key paths, those that need a restart, and any feature that failed to take over. */
export interface ReloadResult {
  applied: string[];
  needsRestart: string[];
  failures: Array<{ part: string; error: string }>;
}

export interface ReloadParts {
  live: LiveSource<MagpieConfig>;
  /** The live config's view (reads the current config). */
  config: MagpieConfig;
  redactor: Redactor;
  env: NodeJS.ProcessEnv;
  agents: AgentDirectory;
  features: readonly MagpieFeature[];
  deps: FeatureDeps;
  logger: Logger;
  /** The channels' parts, when the app loads chat channels (null: it doesn't). */
  channels: (() => ChannelReloadDeps) | null;
}

/**
 * Applies a valid config live: restart-only keys keep their running value and are reported; the rest replaces the
 * frozen config (whoever reads `config` or a `Live` at use sees it), the core takes over agents, routes and the
 * redactor's secrets, and each feature's `reload` what it built from its keys.
 */
export async function applyReload(parts: ReloadParts, next: MagpieConfig): Promise<ReloadResult> {
  const { live, config } = parts;
  const needsRestart = diffConfig(config, next).paths.filter(
    (keyPath) => isRestartOnly(keyPath) && keyPath !== "sourcePath",
  );
  const previous = live.current();
  const kept = deepFreeze(withRestartOnlyKept(previous, next));
  const change: ConfigChange = diffConfig(previous, kept);
  // Replaced, never edited: whoever reads `config` (or a `Live`) at use sees the new values from here on.
  live.set(kept);
  const failures: ReloadResult["failures"] = [];
  const attempt = async (part: string, work: () => void | Promise<void>) => {
    try {
      await work();
    } catch (error) {
      failures.push({ part, error: error instanceof Error ? error.message : String(error) });
    }
  };
  await attempt("core", () => {
    // New secrets (a token added to the file or .env) are redacted from now on; old ones stay hidden.
    createRedactor(config, parts.env, parts.redactor);
    // Always: the directory must not keep the previous config's sections, changed or not.
    parts.agents.replace(config.agents, config.routes, config.llm.model);
  });
  for (const feature of parts.features) {
    const { reload } = feature;
    if (reload) await attempt(feature.name, () => reload(config, parts.deps, change));
  }
  // Channels added, removed or reconnected (src/app/channel-reload.ts); access-only changes were taken above.
  if (parts.channels) failures.push(...(await reloadChannels(parts.channels(), change)));
  const result: ReloadResult = { applied: change.paths, needsRestart, failures };
  // Key paths only: the values (tokens among them) never reach the log.
  parts.logger.info(result, "config-reloaded");
  return result;
}
