import type { ChannelAccessConfig } from "../src/config/sections/channel-access.js";

/**
 * Inbound liveness (DESIGN.md → Message flow): how long a channel may go without completing a receive cycle
 * before it counts as down and is reconnected. Each catalog entry declares its own limit (its natural cycle plus a
 * margin); `channels.<name>.silentAfterSecs` overrides it, and the adapter then shortens its cycle to fit.
 */
export interface Liveness {
  silentAfterSecs: number;
}

/** The section's `silentAfterSecs`, else the channel's own limit. */
export function livenessLimit(section: ChannelAccessConfig, ownSecs: number): Liveness {
  return { silentAfterSecs: section.silentAfterSecs ?? ownSecs };
}

/**
 * How long one receive cycle (a long poll's hold) may last so that a healthy channel completes one within its
 * limit: the channel's natural cycle, or two thirds of a shorter limit (at least 1 s).
 */
export function receiveCycleSecs(limit: Liveness, naturalSecs: number): number {
  return Math.max(1, Math.min(naturalSecs, Math.floor((limit.silentAfterSecs * 2) / 3)));
}
