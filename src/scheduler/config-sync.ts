import type { Logger } from "pino";
import type { AuthorityPort } from "../core/identity.js";
import { deliverRuleText } from "./action-runner.js";
import type { Job, JobSpec } from "./job.js";
import { planJob } from "./job-plan.js";
import type { JobStore } from "./job-store.js";
import { specOfJob } from "./job-view.js";
import { SchedulerError } from "./scheduler-error.js";

export interface SyncCounts {
  added: number;
  updated: number;
  removed: number;
}

const comparable = (job: Job) => JSON.stringify({ ...specOfJob(job), enabled: undefined });

/**
 * Makes the database match the config's jobs (by name): adds new ones, replaces changed ones, removes dropped
 * ones; jobs made in chat or on the CLI are left alone. Every job is validated first, so a bad one changes nothing.
 * Config jobs are the owner's; a report chat must be one Magpie may post to (an owner's chat, an allowed group).
 * Errors name the key path (`cron.jobs[2].deliver.chatId: …`).
 */
export function syncConfigJobs(
  jobs: JobStore,
  specs: Array<JobSpec & { name: string }>,
  options: { timezone: string; now: number; logger: Logger; authority: AuthorityPort },
): SyncCounts {
  const { now } = options;
  const counts = { added: 0, updated: 0, removed: 0 };
  const plans = specs.map((spec, index) => {
    let planned: ReturnType<typeof planJob>;
    try {
      planned = planJob(spec, { defaultTimezone: options.timezone, now, source: "config" });
    } catch (error) {
      // A one-shot whose `at` has passed is history, not a config error: it keeps whatever state it has.
      if (error instanceof SchedulerError && error.code === "cron.at_in_past") return null;
      if (error instanceof SchedulerError)
        throw new SchedulerError(error.code, `cron.jobs[${index}] ("${spec.name}"): ${error.message}`);
      throw error;
    }
    const chat = planned.deliver.chat;
    if (chat && !options.authority.mayDeliver(null, chat)) {
      throw new SchedulerError(
        "cron.deliver_not_allowed",
        `cron.jobs[${index}].deliver.chatId ("${spec.name}"): chat ${chat.chatId} on ${chat.channel} is not one Magpie may post to — ${deliverRuleText(chat)}. Add it there or change deliver.chatId.`,
      );
    }
    return planned;
  });
  for (const [index, spec] of specs.entries()) {
    const existing = jobs.byConfigName(spec.name);
    const planned = plans[index];
    if (!planned) {
      options.logger.info({ job: spec.name }, "cron-config-job-at-in-past");
      continue;
    }
    if (!existing) {
      jobs.insert(planned);
      counts.added += 1;
      continue;
    }
    const same = comparable(existing) === comparable({ ...existing, ...planned });
    // A finished one-shot stays finished: restarting must not run it again.
    if (same && (existing.enabled === planned.enabled || existing.completedAt !== null)) continue;
    // A changed definition starts from now; an unchanged one keeps its next run (so catch-up still sees misses).
    jobs.replace(existing.id, planned, now);
    counts.updated += 1;
  }
  const names = new Set(specs.map((spec) => spec.name));
  for (const job of jobs.list()) {
    if (job.source === "config" && !names.has(job.name)) {
      jobs.remove(job.id);
      counts.removed += 1;
    }
  }
  return counts;
}
