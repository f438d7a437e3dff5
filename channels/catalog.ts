import type { MagpieConfig } from "../src/config/schema.js";
import type { ChannelEntry } from "./channel-entry.js";
import { discordChannel } from "./discord-entry.js";
import { emailChannel } from "./email-entry.js";
import { matrixChannel } from "./matrix-entry.js";
import { slackChannel } from "./slack-entry.js";
import { telegramChannel } from "./telegram-entry.js";

/**
 * Every chat channel Magpie can connect to (DESIGN.md "One channel catalog"). Adding a channel = its adapter,
 * its entry, one line here, its protocol fake, its contract-suite run and its docs; config, access control,
 * pairing, `message`, doctor, /status and the dashboard read this list. The console and the webchat are not
 * networks: they are the owner's own, built in.
 */
export const CHANNEL_CATALOG = [
  telegramChannel,
  discordChannel,
  slackChannel,
  emailChannel,
  matrixChannel,
] as const;

/** One entry of the catalog, with its precise name and section type. */
export type CatalogEntry = (typeof CHANNEL_CATALOG)[number];

/** The name of a catalog channel: `channels.<name>` and a message's `channel`. */
export type ChatChannelName = CatalogEntry["name"];

/** The catalog for code that treats every channel alike: sections are read through `sectionOf`. */
export const CHANNEL_ENTRIES: readonly ChannelEntry[] = CHANNEL_CATALOG;

const BY_NAME: ReadonlyMap<string, ChannelEntry> = new Map(
  CHANNEL_ENTRIES.map((entry) => [entry.name, entry]),
);

/** The catalog entry called `name`, or undefined for the console, the webchat and unknown names. */
export function channelEntry(name: string): ChannelEntry | undefined {
  return BY_NAME.get(name);
}

/** Whether `name` is a catalog channel (not the console, not the webchat). */
export function isChatChannel(name: string): name is ChatChannelName {
  return BY_NAME.has(name);
}

/** Names of every catalog channel, in catalog order. */
export const CHAT_CHANNEL_NAMES: readonly ChatChannelName[] = CHANNEL_CATALOG.map((entry) => entry.name);

/** The `channels.<name>` section of an entry, for its own hooks (isEnabled, doctor, configProblems). */
export function sectionOf(config: MagpieConfig, entry: ChannelEntry): unknown {
  return (config.channels as Record<string, unknown>)[entry.name];
}

/** The catalog channels that are on: `channels.<name>.enabled`, or by default whether its credentials are present. */
export function enabledChannelEntries(config: MagpieConfig): ChannelEntry[] {
  return CHANNEL_ENTRIES.filter((entry) => entry.isEnabled(sectionOf(config, entry)));
}
