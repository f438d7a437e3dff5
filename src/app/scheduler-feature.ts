import { ConfigError } from "../core/errors.js";
import type { MessagingService } from "../core/messenger.js";
import { createPhoneNotifier } from "../notify/phone.js";
import { specOfConfigJob } from "../scheduler/config-jobs.js";
import { createScheduler } from "../scheduler/create-scheduler.js";
import { cronCommand } from "../scheduler/cron-command.js";
import { createJobExecutor } from "../scheduler/job-executor.js";
import { SchedulerError } from "../scheduler/scheduler-error.js";
import type { MagpieFeature } from "./feature.js";

/** Scheduler, phone notifier (Pushover, ntfy) and cross-channel messaging: services, /cron, config job sync, start/stop. */
export const schedulerFeature: MagpieFeature = {
  name: "scheduler",
  setup(app) {
    const { config } = app;
    // Every configured phone provider: owner alerts go to each, `deliver` picks by name.
    const notifier = createPhoneNotifier(config.notify);
    // Read at each use: the access feature installs the real authority whatever the setup order.
    const authority = () => app.authority();
    const scheduler = createScheduler({
      db: app.store.db,
      outbox: app.store.outbox,
      messenger: app.messenger,
      notifier,
      executor: createJobExecutor({ tools: app.tools, agent: app.agent, authority }),
      clock: app.clock,
      logger: app.logger.child({ module: "scheduler" }),
      settings: {
        timezone: config.timezone,
        catchUp: config.cron.catchUp,
        maxRunHistory: config.cron.maxRunHistory,
        runTimeoutMs: config.cron.runTimeoutSecs * 1000,
      },
      maxMessageLength: (channel) => app.channels.get(channel)?.capabilities.maxMessageLength,
      authority,
      events: app.events,
    });
    const messaging: MessagingService = {
      messenger: app.messenger,
      channelNames: () => [...app.channels.keys()],
    };
    app.services.scheduler = scheduler;
    app.services.notifier = notifier;
    app.services.messaging = messaging;
    app.commands.register(cronCommand(scheduler));

    try {
      const counts = scheduler.syncFromConfig(config.cron.jobs.map(specOfConfigJob));
      app.logger.info(counts, "cron-config-synced");
    } catch (error) {
      if (error instanceof SchedulerError) throw new ConfigError([error.message]);
      throw error;
    }
    app.onStop(() => scheduler.stop());
  },
  start(app) {
    app.services.scheduler?.start();
  },
};
