import { z } from "zod";
import { type CatalogEntry, CHANNEL_ENTRIES } from "../../../channels/catalog.js";

export type { ChannelAccessConfig } from "./channel-access.js";

export const consoleSchema = z.strictObject({
  enabled: z.boolean().optional(),
});

/** `channels.<name>` for every catalog entry, each defaulting to its empty section. */
type CatalogSections = { [Entry in CatalogEntry as Entry["name"]]: z.ZodPrefault<Entry["schema"]> };

const catalogSections = Object.fromEntries(
  CHANNEL_ENTRIES.map((entry) => [entry.name, entry.schema.prefault({})]),
) as CatalogSections;

export const channelsSchema = z
  .strictObject({
    ...catalogSections,
    console: consoleSchema.prefault({}),
  })
  .prefault({});
