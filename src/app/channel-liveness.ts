import type { Logger } from "pino";
import { z } from "zod";
import type { ChannelAdapter } from "../core/types.js";
import type { KvRepository } from "../store/kv.js";

/** One channel's liveness, as the monitor reports it. */
export interface ChannelLivenessReport {
  channel: string;
  /** `silent`: it said connected but completed no receive cycle within its limit; `down`: its own state says so. */
  cause: "silent" | "down";
  /** Seconds since the channel last completed a receive cycle (or since it started, if none yet). */
  silentSecs: number;
  limitSecs: number;
  /** Why, in the channel's words (its status detail), when it has one. */
  detail?: string;
}

export interface ChannelLivenessDeps {
  /** The running adapters by name (the app's map: a reload swaps entries). */
  adapters: () => ReadonlyMap<string, ChannelAdapter>;
  /** The channel's limit in seconds, or null when it is not watched (a webhook, the console). Read at each check. */
  limitSecs: (channel: string) => number | null;
  kv: KvRepository;
  logger: Logger;
  /** Wall time in ms: adapters stamp `lastReceiveAt` with it. */
  now: () => number;
  /** Tells the owner (through a path other than `channel`): once when an incident outlasts it, once when it ends. */
  tellOwner: (report: ChannelLivenessReport, phase: "down" | "back") => void;
}

/** The kv key of a channel's incident the owner was told about: survives a restart, so "back" is still said once. */
const toldKey = (channel: string) => `liveness:told:${channel}`;
const toldSchema = z.object({ since: z.number() });

interface Incident {
  /** When the monitor first saw the channel down. */
  since: number;
  /** When it last asked the adapter to reconnect (0: never). */
  reconnectedAt: number;
}

/**
 * Inbound liveness (DESIGN.md → Message flow): each adapter stamps `lastReceiveAt` when it completes a receive
 * cycle; a channel that reports connected but is silent past its limit is told to reconnect (again each further
 * limit), and one still down a limit after it was first seen down is reported to the owner — once per incident,
 * with one "back" note when a receive cycle completes again. `/readyz` and `magpie_channel_up` follow the
 * adapter's status, which says `reconnecting` from the reconnect until the next completed cycle.
 */
export class ChannelLiveness {
  private readonly incidents = new Map<string, Incident>();
  /** When the monitor first saw each adapter: the baseline of one that has completed no cycle yet. */
  private readonly firstSeen = new WeakMap<ChannelAdapter, number>();

  constructor(private readonly deps: ChannelLivenessDeps) {}

  /** One look at every watched channel; the feature runs it on a timer. */
  check(): void {
    const now = this.deps.now();
    const running = this.deps.adapters();
    for (const [channel, adapter] of running) {
      const limitSecs = this.deps.limitSecs(channel);
      if (limitSecs === null) continue;
      const report = this.inspect(channel, adapter, limitSecs, now);
      if (report) this.down(adapter, report, now);
      else this.up(channel, limitSecs);
    }
    // A channel turned off by a reload is no longer down: its incident ends without a note.
    for (const channel of this.incidents.keys()) if (!running.has(channel)) this.incidents.delete(channel);
  }

  /** Null when the channel is live; else why not. */
  private inspect(
    channel: string,
    adapter: ChannelAdapter,
    limitSecs: number,
    now: number,
  ): ChannelLivenessReport | null {
    const status = adapter.status();
    if (status.state === "stopped") return null;
    let seen = this.firstSeen.get(adapter);
    if (seen === undefined) {
      seen = now;
      this.firstSeen.set(adapter, seen);
    }
    const silentMs = now - (status.lastReceiveAt ?? seen);
    const silentSecs = Math.round(silentMs / 1000);
    if (silentMs > limitSecs * 1000)
      return { channel, cause: "silent", silentSecs, limitSecs, detail: status.detail };
    // Connecting for the first time, or its own retry under way: down, though not yet past its limit.
    if (status.state !== "connected")
      return { channel, cause: "down", silentSecs, limitSecs, detail: status.detail };
    return null;
  }

  private down(adapter: ChannelAdapter, report: ChannelLivenessReport, now: number): void {
    const limitMs = report.limitSecs * 1000;
    let incident = this.incidents.get(report.channel);
    if (!incident) {
      incident = { since: now, reconnectedAt: 0 };
      this.incidents.set(report.channel, incident);
    }
    const state = adapter.status().state;
    // A channel that gave up (a rejected token) is not reconnected here: its cause needs the owner, not a retry.
    if (report.cause === "silent" && state !== "failed" && now - incident.reconnectedAt >= limitMs) {
      incident.reconnectedAt = now;
      const reason = `no receive cycle for ${report.silentSecs} s (limit ${report.limitSecs} s): reconnecting`;
      this.deps.logger.warn(
        { channel: report.channel, silentSecs: report.silentSecs, limitSecs: report.limitSecs },
        "channel-silent",
      );
      adapter.reconnect?.(reason);
    }
    if (now - incident.since >= limitMs && !this.deps.kv.has(toldKey(report.channel))) {
      this.deps.kv.set(toldKey(report.channel), { since: incident.since });
      this.deps.logger.warn({ channel: report.channel, cause: report.cause }, "channel-down-owner-told");
      this.deps.tellOwner({ ...report, detail: adapter.status().detail }, "down");
    }
  }

  private up(channel: string, limitSecs: number): void {
    this.incidents.delete(channel);
    const told = this.deps.kv.get(toldKey(channel), toldSchema);
    if (!told) return;
    this.deps.kv.delete(toldKey(channel));
    const downSecs = Math.round((this.deps.now() - told.since) / 1000);
    this.deps.logger.info({ channel, downSecs }, "channel-back");
    this.deps.tellOwner({ channel, cause: "down", silentSecs: downSecs, limitSecs }, "back");
  }
}
