import type { ReplyTarget } from "../core/types.js";

export type JobKind = "shell" | "agent" | "message";
export type DeliveryMode = "always" | "on_error" | "on_success" | "none";
export type RunStatus = "running" | "ok" | "error" | "timeout" | "skipped";
export type RunTrigger = "schedule" | "manual" | "catch_up";

/** Where a job's report goes. */
export interface Delivery {
  /** Chat target; absent for jobs made outside a chat with no explicit target. */
  chat?: ReplyTarget;
  pushover: boolean;
  mode: DeliveryMode;
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
  deliver: Delivery;
  enabled: boolean;
  source: "chat" | "config" | "cli";
  createdBy?: string;
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
  alert?: { status: "sent" | "failed" | "not_configured"; error?: string };
  skipped?: string;
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
  deliver?: { channel?: string; chatId?: string; pushover?: boolean; mode?: DeliveryMode };
  enabled?: boolean;
}
