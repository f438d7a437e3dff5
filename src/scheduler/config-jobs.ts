import type { CronJobConfig } from "../config/sections/cron.js";
import type { JobSpec } from "./job.js";

/** A job from `cron.jobs` as a scheduler spec (config keys are camelCase already). */
export function specOfConfigJob(job: CronJobConfig): JobSpec & { name: string } {
  return {
    name: job.name,
    expression: job.expression,
    delay: job.delay,
    at: job.at,
    command: job.command,
    prompt: job.prompt,
    message: job.message,
    timezone: job.timezone,
    agent: job.agent,
    toolSet: job.toolSet,
    ...(job.allowAfterUntrusted ? { allowAfterUntrusted: job.allowAfterUntrusted } : {}),
    deliver: job.deliver,
    enabled: job.enabled,
  };
}
