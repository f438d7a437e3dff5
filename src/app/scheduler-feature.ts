import type { MagpieConfig } from "../config/schema.js";
import type { MessagingService } from "../core/messenger.js";
import { ConfigError } from "../lib/errors.js";
import { specOfConfigJob } from "../scheduler/config-jobs.js";
import { createScheduler } from "../scheduler/create-scheduler.js";
import { cronCommand } from "../scheduler/cron-command.js";
import { createJobExecutor } from "../scheduler/job-executor.js";
import type { SchedulerSettings } from "../scheduler/scheduler.js";
import { SchedulerError } from "../scheduler/scheduler-error.js";
import type { MagpieFeature } from "./feature.js";

/** Scheduler, phone notifier (Pushover, ntfy) and cross-channel messaging: services, /cron, config job sync, start/stop. */
export const schedulerFeature: MagpieFeature = {
  name: "scheduler",
  provides: ["scheduler"],
  uses: ["authority"],
  setup(config, app) {
    // Every configured phone provider (the app's one notifier): owner alerts go to each, `deliver` picks by name.
    const notifier = app.services.notifier;
    // Read at each use: the access feature installs the real authority whatever the setup order.
    const authority = () => app.ports.authority();
    const scheduler = createScheduler({
      db: app.store.db,
      outbox: app.store.outbox,
      messenger: app.messenger,
      notifier,
      executor: createJobExecutor({ tools: app.tools, agent: app.agent, authority }),
      clock: app.clock,
      logger: app.logger.child({ module: "scheduler" }),
      settings: settingsOf(config),
      maxMessageLength: (channel) => app.channels.get(channel)?.capabilities.maxMessageLength,
      authority,
      events: app.events,
      failover: () => app.services.deliveryFailover,
      kv: app.store.kv,
    });
    const messaging: MessagingService = {
      messenger: app.messenger,
      channelNames: () => [...app.channels.keys()],
    };
    app.services.scheduler = scheduler;
    app.services.messaging = messaging;

    try {
      const counts = scheduler.syncFromConfig(config.cron.jobs.map(specOfConfigJob));
      app.logger.info(counts, "cron-config-synced");
    } catch (error) {
      if (error instanceof SchedulerError) throw new ConfigError([error.message]);
      throw error;
    }
    return { commands: [cronCommand(scheduler)], stop: () => scheduler.stop() };
  },
  start(_config, app) {
    app.services.scheduler?.start();
  },
  /**
   * Config jobs follow the file by name: new ones are added, changed ones re-planned from now (a run in progress
   * finishes; runs of one job never overlap), dropped ones removed; jobs made in chat or on the CLI are untouched.
   * Every job is checked first, so a bad one changes no job (the reload reports it). Delivery targets are judged
   * by the reloaded access rules (the access feature reloads first).
   */
  reload(config, app, change) {
    const scheduler = app.services.scheduler;
    if (!scheduler) return;
    // `timezone` is restart-only (src/config/config-change.ts): the running zone stays until a restart.
    if (change.touches("cron")) scheduler.updateSettings(settingsOf(config));
    // An allowlist change can make a config job's report chat allowed (or not): the jobs are judged again.
    const judged = change.touches("cron.jobs") || change.touches("channels");
    if (!judged) return;
    const counts = scheduler.syncFromConfig(config.cron.jobs.map(specOfConfigJob));
    if (counts.added + counts.updated + counts.removed > 0) app.logger.info(counts, "cron-config-synced");
  },
};

function settingsOf(config: MagpieConfig): SchedulerSettings {
  return {
    timezone: config.timezone,
    catchUp: config.cron.catchUp,
    maxRunHistory: config.cron.maxRunHistory,
    runTimeoutMs: config.cron.runTimeoutSecs * 1000,
  };
}
