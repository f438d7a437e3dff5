import type { SenderIdentity } from "../core/identity.js";
import type { ReplyTarget } from "../core/types.js";

export type JobKind = "shell" | "agent" | "message";
export type DeliveryMode = "always" | "on_error" | "on_success" | "none";
/**
 * How a run is stored: `ok`, `error`, `timeout` (it ran), `skipped` (the previous run of the job was still going)
 * or `missed` (its slot passed while Magpie was down or held up, and no run was made for it).
 */
export type RunStatus = "running" | "ok" | "error" | "timeout" | "skipped" | "missed";
/** What became of a due slot, as users and events see it (DESIGN.md → Scheduler). */
export type CronOutcome = "ran" | "failed" | "missed" | "skipped";

/** A stored run status as its outcome (`running` counts as ran: it started). */
export function cronOutcomeOf(status: RunStatus): CronOutcome {
  if (status === "error" || status === "timeout") return "failed";
  if (status === "missed" || status === "skipped") return status;
  return "ran";
}
export type RunTrigger = "schedule" | "manual" | "catch_up";

/** Where a job's report goes. */
export interface Delivery {
  /** Chat target; absent for jobs made outside a chat with no explicit target. */
  chat?: ReplyTarget;
  pushover: boolean;
  /** Absent on jobs stored before ntfy existed. */
  ntfy?: boolean;
  mode: DeliveryMode;
}

/**
 * Who made a job, whose authority its runs carry (DESIGN.md → Security → "Jobs carry their creator's
 * authority"). Config and CLI jobs are the owner's (`ownerIdentity("local")`).
 */
export interface JobCreator {
  identity: SenderIdentity;
  /** The agent of the creating turn; absent when the owner made it directly (/cron, CLI, config). */
  agent?: string;
  /**
   * The tools the creating turn had. A command job needs `shell` among them; a prompt job runs with at most
   * these. Absent for the owner's own jobs (/cron, CLI, config, jobs from before creators were recorded):
   * then only the job's own `toolSet` limits it.
   */
  toolNames?: string[];
}

/** A scheduled job as stored. */
export interface Job {
  id: number;
  name: string;
  schedule: { kind: "cron"; expression: string } | { kind: "once" };
  timezone: string;
  kind: JobKind;
  /** The shell command, agent prompt or message text. */
  payload: string;
  agent?: string;
  toolSet?: string | string[];
  /** Tools a prompt run may still use after untrusted content entered it (DESIGN.md → Security → "Untrusted content"). */
  allowAfterUntrusted?: string[];
  deliver: Delivery;
  enabled: boolean;
  source: "chat" | "config" | "cli";
  /** Session key of the turn that made it (chat jobs). */
  createdBy?: string;
  creator: JobCreator;
  /** The chat the job was made from: where its approval requests go. Absent for config and CLI jobs. */
  createdFrom?: ReplyTarget;
  nextRunAt: number | null;
  lastRunAt: number | null;
  runRequestedAt: number | null;
  completedAt: number | null;
  createdAt: number;
}

/** What happened to a run's report. */
export interface DeliveryResult {
  chat?: { outboxId: number; status: "queued" | "sent" | "failed"; error?: string };
  pushover?: { status: "sent" | "failed" | "not_configured"; error?: string };
  ntfy?: { status: "sent" | "failed" | "not_configured"; error?: string };
  alert?: { status: "sent" | "failed" | "not_configured"; error?: string };
  /** The `delivery.fallback` path that delivered the report instead (then no separate alert goes out). */
  failedOver?: string;
  skipped?: string;
  /** The chat target was refused at delivery time (no longer a chat Magpie may post to); nothing was sent. */
  refused?: string;
}

/** One recorded run. */
export interface JobRun {
  id: number;
  jobId: number;
  scheduledAt: number | null;
  startedAt: number;
  finishedAt: number | null;
  durationMs: number | null;
  status: RunStatus;
  trigger: RunTrigger;
  output: string | null;
  delivery: DeliveryResult | null;
  deliveryState: "none" | "pending" | "delivered" | "failed";
}

/** A new job as the tools, /cron, the CLI and config describe it, before validation. */
export interface JobSpec {
  name?: string;
  expression?: string;
  delay?: string;
  at?: string;
  command?: string;
  prompt?: string;
  message?: string;
  timezone?: string;
  agent?: string;
  toolSet?: string | string[];
  allowAfterUntrusted?: string[];
  deliver?: { channel?: string; chatId?: string; pushover?: boolean; ntfy?: boolean; mode?: DeliveryMode };
  enabled?: boolean;
}
