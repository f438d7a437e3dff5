import { z } from "zod";
import { idListSchema } from "./common.js";

/** Access keys every chat channel's config section takes (DESIGN.md "Access control"). */
export const channelAccessKeys = {
  enabled: z.boolean().optional(),
  dmPolicy: z.enum(["pairing", "allowlist", "open", "disabled"]).default("pairing"),
  allowFrom: idListSchema("user ids").default([]),
  groupPolicy: z.enum(["allowlist", "open", "disabled"]).default("allowlist"),
  groups: idListSchema("chat ids").default([]),
  requireMention: z.boolean().default(true),
  /** Outbound pacing within the platform's published limits; false for benchmarks against fakes. */
  pacing: z.boolean().default(true),
  /**
   * Inbound liveness: seconds without a completed receive cycle (long poll, heartbeat ack, /sync …) after which the
   * channel counts as down and is reconnected. Unset: the channel's own limit from its catalog entry.
   */
  silentAfterSecs: z.number().positive().max(86_400).optional(),
};

const accessSchema = z.object(channelAccessKeys);

/** The access rules of one chat channel, as every catalog entry's section carries them. */
export type ChannelAccessConfig = Pick<
  z.infer<typeof accessSchema>,
  | "enabled"
  | "dmPolicy"
  | "allowFrom"
  | "groupPolicy"
  | "groups"
  | "requireMention"
  | "pacing"
  | "silentAfterSecs"
>;
