import type { Job, JobSpec } from "./job.js";

/** A job with its schedule described for people and tools. */
export type JobView = {
  id: number;
  name: string;
  schedule: string;
  timezone: string;
  kind: Job["kind"];
  command?: string;
  prompt?: string;
  message?: string;
  enabled: boolean;
  status: "active" | "paused" | "done";
  next_run: string | null;
  last_run: string | null;
  deliver: { channel?: string; chat_id?: string; pushover: boolean; mode: Job["deliver"]["mode"] };
  source: Job["source"];
};

const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());

function payloadField(job: Job): Pick<JobSpec, "command" | "prompt" | "message"> {
  if (job.kind === "shell") return { command: job.payload };
  if (job.kind === "agent") return { prompt: job.payload };
  return { message: job.payload };
}

/** A job as tools, /cron and the CLI show it (snake_case keys, ISO times). */
export function toJobView(job: Job): JobView {
  return {
    id: job.id,
    name: job.name,
    schedule:
      job.schedule.kind === "cron"
        ? job.schedule.expression
        : `once at ${iso(job.nextRunAt) ?? iso(job.lastRunAt) ?? "?"}`,
    timezone: job.timezone,
    kind: job.kind,
    ...payloadField(job),
    enabled: job.enabled,
    status: job.completedAt !== null ? "done" : job.enabled ? "active" : "paused",
    next_run: job.enabled ? iso(job.nextRunAt) : null,
    last_run: iso(job.lastRunAt),
    deliver: {
      ...(job.deliver.chat ? { channel: job.deliver.chat.channel, chat_id: job.deliver.chat.chatId } : {}),
      pushover: job.deliver.pushover,
      mode: job.deliver.mode,
    },
    source: job.source,
  };
}

/** A stored job back as the spec that would create it (updates start from it; config sync compares it). */
export function specOfJob(job: Job): JobSpec {
  return {
    name: job.name,
    ...(job.schedule.kind === "cron" ? { expression: job.schedule.expression } : {}),
    ...payloadField(job),
    timezone: job.timezone,
    agent: job.agent,
    toolSet: job.toolSet,
    ...(job.allowAfterUntrusted ? { allowAfterUntrusted: job.allowAfterUntrusted } : {}),
    deliver: {
      channel: job.deliver.chat?.channel,
      chatId: job.deliver.chat?.chatId,
      pushover: job.deliver.pushover,
      mode: job.deliver.mode,
    },
    enabled: job.enabled,
  };
}
