import type { AppContext, MagpieFeature } from "../app/feature.js";
import { AgentDirectory } from "../core/agents.js";
import { systemClock } from "../core/clock.js";
import { ConfigError } from "../core/errors.js";
import type { ToolCallContext } from "../core/tool-runtime.js";
import { createPushoverNotifier } from "../notify/pushover.js";
import type { MessagingService } from "../tools/message.js";
import { specOfConfigJob } from "./config-jobs.js";
import { createScheduler } from "./create-scheduler.js";
import { cronCommand } from "./cron-command.js";
import { promptJobToolSet } from "./job-authority.js";
import { createJobExecutor } from "./job-executor.js";
import { JobStore } from "./job-store.js";
import type { Scheduler } from "./scheduler.js";
import { SchedulerError } from "./scheduler-error.js";

/** Scheduler, Pushover notifier and cross-channel messaging: services, /cron, config job sync, start/stop. */
export const schedulerFeature: MagpieFeature = {
  name: "scheduler",
  setup(app) {
    const { config } = app;
    const notifier = createPushoverNotifier(config.notify.pushover);
    // Read at each use: the access feature installs the real authority whatever the setup order.
    const authority = () => app.authority();
    const scheduler = createScheduler({
      db: app.store.db,
      outbox: app.store.outbox,
      messenger: app.messenger,
      notifier,
      executor: createJobExecutor({ tools: app.tools, agent: app.agent, authority }),
      clock: systemClock,
      logger: app.logger.child({ module: "scheduler" }),
      settings: {
        timezone: config.timezone,
        catchUp: config.cron.catchUp,
        maxRunHistory: config.cron.maxRunHistory,
        runTimeoutMs: config.cron.runTimeoutSecs * 1000,
      },
      maxMessageLength: (channel) => app.channels.get(channel)?.capabilities.maxMessageLength,
      authority,
    });
    const messaging: MessagingService = {
      messenger: app.messenger,
      channelNames: () => [...app.channels.keys()],
    };
    app.services.scheduler = scheduler;
    app.services.notifier = notifier;
    app.services.messaging = messaging;
    app.services.turnToolNames = turnToolNames(app, new JobStore(app.store.db));
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
    (app.services.scheduler as Scheduler).start();
  },
};

/**
 * The tools a calling turn has, for the job tools when the tool context does not list them: the turn's agent's
 * configured tool set, or for a scheduled prompt job's turn (`cron:<job>:<run>`) the tools that job runs with.
 */
function turnToolNames(app: AppContext, jobs: JobStore): (context: ToolCallContext) => string[] {
  const { config } = app;
  const agents = new AgentDirectory(config.agents, config.routes, config.llm.model);
  const resolve = (toolSet: string | string[]) => app.tools.resolveToolSet(toolSet);
  return (context) => {
    const scheduled = /^cron:(\d+):/.exec(context.sessionKey);
    if (scheduled) {
      const job = jobs.get(Number(scheduled[1]));
      return job ? resolve(promptJobToolSet(job, resolve)) : [];
    }
    const agent = agents.get(context.agent);
    return agent ? resolve(agent.toolSet) : [];
  };
}
