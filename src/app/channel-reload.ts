import type { Logger } from "pino";
import { CHANNEL_ENTRIES, enabledChannelEntries, sectionOf } from "../../channels/catalog.js";
import type { ChannelEntry } from "../../channels/channel-entry.js";
import type { ConfigChange } from "../config/config-change.js";
import type { MagpieConfig } from "../config/schema.js";
import { channelAccessKeys } from "../config/sections/channel-access.js";
import type { ChannelAdapter, InboundSink } from "../core/types.js";
import type { HttpRoutes } from "../http/routes.js";
import { errorMessage } from "../lib/errors.js";
import type { Store } from "../store/index.js";

/** What the channels' reload works on: the app's running adapters and what they are built from. */
export interface ChannelReloadDeps {
  /** The running adapters by name (the app's map: `/readyz`, the outbox and the features read it). */
  adapters: Map<string, ChannelAdapter>;
  /** The running config (already holding the new values): what adapters read, as at start-up. */
  config: MagpieConfig;
  /** Where adapters hand inbound messages and button presses (the router). */
  sink: InboundSink;
  logger: Logger;
  http: HttpRoutes;
  store: Store;
  /** The outbox: a started channel's waiting replies go out at once. */
  outbox: { resumeChannel(channel: string): void };
}

/**
 * Keys of a channel section that access control reads at each message (`dmPolicy`, `allowFrom`, `groups` …): a
 * change there is taken over without touching the connection. Every other key (token, API root, mode, pacing,
 * silentAfterSecs — the receive cycle is fitted to it …)
 * is the adapter's own, and a change restarts it.
 */
const ACCESS_KEYS = new Set(
  Object.keys(channelAccessKeys).filter((key) => key !== "pacing" && key !== "silentAfterSecs"),
);

/**
 * Channels after a config reload (DESIGN.md → Configuration → Reload): a catalog channel turned on is built from the
 * catalog and started; one turned off (or removed) is stopped — its waiting replies stay pending and go out if it
 * comes back; one whose connection settings changed is restarted (an access-only change is not a restart). A
 * replacement that fails to start (a rejected token) is reported, and the previous settings are started again.
 * Returns the failures, each naming `channels.<name>`.
 */
export async function reloadChannels(
  deps: ChannelReloadDeps,
  change: ConfigChange,
): Promise<Array<{ part: string; error: string }>> {
  if (!change.touches("channels")) return [];
  const wanted = new Set(enabledChannelEntries(change.next).map((entry) => entry.name));
  const failures: Array<{ part: string; error: string }> = [];
  for (const entry of CHANNEL_ENTRIES) {
    const running = deps.adapters.get(entry.name);
    const part = `channels.${entry.name}`;
    try {
      if (running && !wanted.has(entry.name)) {
        await stopChannel(deps, entry.name, running);
        deps.logger.info({ channel: entry.name }, "channel-removed");
      } else if (!running && wanted.has(entry.name)) {
        await startChannel(deps, entry, deps.config);
        deps.logger.info({ channel: entry.name }, "channel-added");
      } else if (running && connectionChanged(entry, change.previous, change.next)) {
        await restartChannel(deps, entry, running, change);
        deps.logger.info({ channel: entry.name }, "channel-restarted");
      }
    } catch (error) {
      deps.logger.error({ channel: entry.name, err: errorMessage(error) }, "channel-reload-failed");
      failures.push({ part, error: errorMessage(error) });
    }
  }
  return failures;
}

/** Whether anything but the access keys changed in the channel's section. */
function connectionChanged(entry: ChannelEntry, previous: MagpieConfig, next: MagpieConfig): boolean {
  return JSON.stringify(connectionOf(entry, previous)) !== JSON.stringify(connectionOf(entry, next));
}

function connectionOf(entry: ChannelEntry, config: MagpieConfig): Record<string, unknown> {
  const section = (sectionOf(config, entry) ?? {}) as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(section)
      .filter(([key]) => !ACCESS_KEYS.has(key))
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

async function create(deps: ChannelReloadDeps, entry: ChannelEntry, config: MagpieConfig) {
  const { loadChatChannel } = await import("../../channels/index.js");
  return loadChatChannel(entry, { config, logger: deps.logger, http: deps.http, store: deps.store });
}

/** Takes the adapter out of the map first (the outbox parks its replies), then stops it. */
async function stopChannel(deps: ChannelReloadDeps, name: string, adapter: ChannelAdapter): Promise<void> {
  const { releaseChannelRoutes } = await import("../../channels/index.js");
  if (deps.adapters.get(name) === adapter) deps.adapters.delete(name);
  releaseChannelRoutes(adapter);
  await adapter.stop();
}

async function startChannel(
  deps: ChannelReloadDeps,
  entry: ChannelEntry,
  config: MagpieConfig,
): Promise<void> {
  const adapter = await create(deps, entry, config);
  try {
    await adapter.start(deps.sink);
  } catch (error) {
    await stopChannel(deps, entry.name, adapter).catch(() => undefined);
    throw error;
  }
  deps.adapters.set(entry.name, adapter);
  deps.outbox.resumeChannel(entry.name);
}

/**
 * Stops the running adapter before its successor starts (one poller per bot token: Telegram answers a second one
 * with 409). What was fetched but not yet acknowledged is fetched again by the successor; the inbox drops the copy
 * by its platform message id, so nothing is lost or answered twice. A channel whose platform redelivers nothing
 * (`restartOverlap` in its catalog entry) starts its successor first instead.
 */
async function restartChannel(
  deps: ChannelReloadDeps,
  entry: ChannelEntry,
  running: ChannelAdapter,
  change: ConfigChange,
): Promise<void> {
  // A replacement that can't even be built (a missing token) leaves the running adapter alone.
  const replacement = await create(deps, entry, deps.config);
  if (entry.restartOverlap) {
    // Both run for a moment (nothing arriving in between is missed); one that can't start leaves the old one be.
    try {
      await replacement.start(deps.sink);
    } catch (error) {
      await stopChannel(deps, entry.name, replacement).catch(() => undefined);
      throw new Error(`${errorMessage(error)}; the previous settings keep running until the file is fixed`);
    }
    deps.adapters.set(entry.name, replacement);
    deps.outbox.resumeChannel(entry.name);
    await stopChannel(deps, entry.name, running);
    return;
  }
  await stopChannel(deps, entry.name, running);
  try {
    await replacement.start(deps.sink);
  } catch (error) {
    await stopChannel(deps, entry.name, replacement).catch(() => undefined);
    // Back to the settings that worked, so the channel stays reachable while the owner fixes the file.
    let restored = "";
    try {
      await startChannel(deps, entry, change.previous);
      restored = "; the previous settings run again until the file is fixed";
    } catch (previousError) {
      restored = `; the previous settings failed too (${errorMessage(previousError)}): the channel is stopped`;
    }
    throw new Error(`${errorMessage(error)}${restored}`);
  }
  deps.adapters.set(entry.name, replacement);
  deps.outbox.resumeChannel(entry.name);
}
