import { channelEntry, sectionOf } from "../../channels/catalog.js";
import { ChannelLiveness, type ChannelLivenessReport } from "./channel-liveness.js";
import { defineFeature, type MagpieFeature } from "./feature.js";
import { ownerAlerter } from "./owner-alert.js";

/** How often the channels are looked at: a limit is seconds at the least, so a second's lateness is the slack. */
const CHECK_EVERY_MS = 500;

/**
 * Inbound liveness (DESIGN.md → Message flow): watches every catalog channel's receive cycles against the limit
 * its entry declares (`channels.<name>.silentAfterSecs` overrides it), reconnects a silent one, and tells the owner
 * through another path — every phone provider and a DM on another channel — once per incident, and once when it
 * is back.
 */
export const livenessFeature: MagpieFeature = defineFeature({
  name: "liveness",
  uses: ["authority"],
  setup(config, app) {
    const logger = app.logger.child({ component: "liveness" });
    const alert = ownerAlerter(app, logger);
    const tellOwner = (report: ChannelLivenessReport, phase: "down" | "back") => {
      const label = channelEntry(report.channel)?.label ?? report.channel;
      if (phase === "back") {
        alert({
          title: `Magpie: ${label} is back`,
          text: `Magpie receives from ${label} again (it was down for about ${report.silentSecs} s).`,
          exceptChannel: report.channel,
        });
        return;
      }
      const why =
        report.cause === "silent"
          ? `it completed no receive cycle for ${report.silentSecs} s (its limit is ${report.limitSecs} s) and reconnecting has not helped yet`
          : `it is not connected${report.detail ? ` (${report.detail.slice(0, 200)})` : ""}`;
      alert({
        title: `Magpie: ${label} is down`,
        text: `Magpie is not receiving from ${label}: ${why}. Messages sent there now wait until it is back; you'll get one note when it is.`,
        exceptChannel: report.channel,
      });
    };
    const monitor = new ChannelLiveness({
      adapters: () => app.channels,
      limitSecs: (channel) => {
        const entry = channelEntry(channel);
        return entry?.liveness?.(sectionOf(config, entry))?.silentAfterSecs ?? null;
      },
      kv: app.store.kv,
      logger,
      // Adapters stamp their receive cycles with the wall clock.
      now: () => Date.now(),
      tellOwner,
    });
    let timer: NodeJS.Timeout | null = null;
    return {
      afterReady: () => {
        timer = setInterval(() => {
          try {
            monitor.check();
          } catch (error) {
            logger.error({ err: error }, "liveness-check-failed");
          }
        }, CHECK_EVERY_MS);
        timer.unref();
      },
      stop: () => {
        if (timer) clearInterval(timer);
      },
    };
  },
});
