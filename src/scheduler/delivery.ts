import type { Logger } from "pino";
import type { AuthorityPort } from "../core/identity.js";
import type { Messenger } from "../core/messenger.js";
import { errorMessage } from "../lib/errors.js";
import { markAlsoSentVia } from "../notify/delivery-failover.js";
import type { Notifier } from "../notify/pushover.js";
import type { Store } from "../store/index.js";
import type { OutboxRepository } from "../store/outbox.js";
import { deliverRuleText, mayDeliverNow } from "./action-runner.js";
import type { DeliveryResult, Job, JobRun } from "./job.js";
import type { JobStore } from "./job-store.js";
import { formatChatReport, formatPushoverReport, type RunOutcome } from "./report.js";

export interface DeliveryDeps {
  jobs: JobStore;
  outbox: OutboxRepository;
  messenger: Messenger;
  notifier: Notifier;
  logger: Logger;
  /** Longest message the channel takes (its capabilities), for trimming. */
  maxMessageLength(channel: string): number;
  /** Who may be posted to: every chat report is checked again when it goes out. */
  authority: () => AuthorityPort;
  /**
   * The delivery-failover path that delivered a failed report (`null`: every path failed; `undefined`: no
   * failover for it). When one delivered it, the owner already has the report: no separate alert goes out.
   */
  failover?: () => ((outboxId: number) => Promise<string | null | undefined>) | undefined;
  /** Where a report's chat copy records the phone paths it also went out on (the failover skips them). */
  kv?: Store["kv"];
}

/** The phone providers a job can deliver to, each a `deliver` flag and a `DeliveryResult` field. */
const PHONE_PROVIDERS = ["pushover", "ntfy"] as const;

/** Whether a phone notification the job asked for didn't go out. */
const phoneFailed = (result: DeliveryResult): boolean =>
  PHONE_PROVIDERS.some((provider) => result[provider] !== undefined && result[provider].status !== "sent");

/** How long a run waits on its chat report before leaving it to the periodic check. */
const SETTLE_WAIT_MS = 2 * 60_000;

function wanted(mode: Job["deliver"]["mode"], status: RunOutcome["status"]): boolean {
  if (mode === "none") return false;
  // A missed run is an error to its creator: the work they scheduled did not happen.
  if (mode === "on_error") return status === "error" || status === "timeout" || status === "missed";
  if (mode === "on_success") return status === "ok";
  return true;
}

/**
 * Delivers run reports: chat reports through the durable outbox (retries, exactly once), phone reports
 * through Pushover. The outbox finishes asynchronously, so `settle` later reads each report's final
 * state, records it on the run and raises a Pushover alert when a report finally failed.
 */
export class RunDelivery {
  /** Runs being settled right now: the prompt path and the periodic check must not alert twice. */
  private readonly settling = new Set<number>();

  constructor(private readonly deps: DeliveryDeps) {}

  async deliver(job: Job, runId: number, outcome: RunOutcome): Promise<DeliveryResult> {
    const { jobs, messenger, notifier, logger } = this.deps;
    const result: DeliveryResult = {};
    if (!wanted(job.deliver.mode, outcome.status)) {
      result.skipped = `mode ${job.deliver.mode}`;
      jobs.setDelivery(runId, result, "none");
      return result;
    }
    const chat = job.deliver.chat;
    if (chat && !mayDeliverNow(this.deps.authority(), chat)) {
      // The allowlist changed since the job was made: nothing is ever posted there.
      result.refused = `${chat.channel}:${chat.chatId} is no longer a chat Magpie may post to (${deliverRuleText(chat)}); the report was not sent.`;
      logger.warn(
        { job: job.id, run: runId, channel: chat.channel, chatId: chat.chatId },
        "cron-delivery-refused",
      );
    } else if (chat) {
      const text = formatChatReport(job, outcome, this.deps.maxMessageLength(chat.channel));
      try {
        result.chat = { outboxId: messenger.send(chat, { text }, "cron"), status: "queued" };
      } catch (error) {
        logger.error({ job: job.id, err: error }, "cron-report-enqueue-failed");
        result.chat = { outboxId: -1, status: "failed", error: errorMessage(error) };
      }
    }
    // The chat copy is queued: before it can fail over, it knows the phone paths the report also goes out on.
    const chatCopy = result.chat && result.chat.outboxId >= 0 ? result.chat.outboxId : undefined;
    for (const provider of PHONE_PROVIDERS)
      if (job.deliver[provider] && chatCopy !== undefined && this.deps.kv)
        markAlsoSentVia(this.deps.kv, chatCopy, provider);
    for (const provider of PHONE_PROVIDERS) {
      if (!job.deliver[provider]) continue;
      try {
        const report = formatPushoverReport(job, outcome);
        await notifier.send({ ...report, priority: outcome.status === "ok" ? 0 : 1 }, [provider]);
        result[provider] = { status: "sent" };
      } catch (error) {
        if (chatCopy !== undefined && this.deps.kv) markAlsoSentVia(this.deps.kv, chatCopy, provider, false);
        const notConfigured =
          error instanceof Error && "code" in error && error.code === `${provider}.not_configured`;
        result[provider] = {
          status: notConfigured ? "not_configured" : "failed",
          error: errorMessage(error),
        };
        logger.warn({ job: job.id, err: error }, `cron-${provider}-failed`);
      }
    }
    const phoneDeliveryFailed = phoneFailed(result);
    if (result.chat?.status === "failed" || result.refused) {
      const run = jobs.getRun(runId);
      if (run && chat) result.alert = await this.alert(run, chat, result.chat?.error ?? result.refused ?? "");
      jobs.setDelivery(runId, result, "failed");
      return result;
    }
    const state = result.chat
      ? "pending"
      : phoneDeliveryFailed
        ? "failed"
        : result.pushover || result.ntfy
          ? "delivered"
          : "none";
    jobs.setDelivery(runId, result, state);
    if (result.chat) {
      // Settle as soon as the outbox finishes; the scheduler's periodic `settle` covers restarts.
      const { outboxId } = result.chat;
      void messenger
        .waitForDelivery(outboxId, SETTLE_WAIT_MS)
        .then(() => this.settleRun(runId))
        .catch((error: unknown) => logger.error({ run: runId, err: error }, "cron-delivery-settle-failed"));
    }
    return result;
  }

  /** Reads the outbox state of every run whose chat report is still on its way. */
  async settle(): Promise<void> {
    for (const run of this.deps.jobs.runsAwaitingDelivery()) await this.settleRun(run.id);
  }

  pendingCount(): number {
    return this.deps.jobs.runsAwaitingDelivery().length;
  }

  private async settleRun(runId: number): Promise<void> {
    if (this.settling.has(runId)) return;
    this.settling.add(runId);
    try {
      await this.settleOnce(runId);
    } finally {
      this.settling.delete(runId);
    }
  }

  private async settleOnce(runId: number): Promise<void> {
    const run = this.deps.jobs.getRun(runId);
    const chat = run?.delivery?.chat;
    if (!run?.delivery || !chat) return;
    const item = this.deps.outbox.get(chat.outboxId);
    if (!item || item.status === "pending") return;
    const delivery: DeliveryResult = { ...run.delivery };
    if (item.status === "sent") {
      for (const provider of PHONE_PROVIDERS)
        if (this.deps.kv) markAlsoSentVia(this.deps.kv, item.id, provider, false);
      delivery.chat = { ...chat, status: "sent" };
      this.deps.jobs.setDelivery(runId, delivery, phoneFailed(delivery) ? "failed" : "delivered");
      return;
    }
    delivery.chat = { ...chat, status: "failed", error: item.lastError ?? "unknown error" };
    const failedOverVia = await this.deps.failover?.()?.(item.id);
    if (failedOverVia) delivery.failedOver = failedOverVia;
    else delivery.alert = await this.alert(run, item.target, item.lastError ?? "unknown error");
    this.deps.jobs.setDelivery(runId, delivery, "failed");
  }

  private async alert(
    run: JobRun,
    target: { channel: string; chatId: string },
    error: string,
  ): Promise<DeliveryResult["alert"]> {
    const { notifier, logger, jobs } = this.deps;
    const job = jobs.get(run.jobId);
    logger.warn({ job: run.jobId, run: run.id, error }, "cron-delivery-failed");
    if (!notifier.configured) return { status: "not_configured" };
    try {
      await notifier.send({
        title: `Magpie: report of "${job?.name ?? `job ${run.jobId}`}" not delivered`,
        message: `Job #${run.jobId} ran (${run.status}) but its report could not be delivered to ${target.channel}:${target.chatId}: ${error}`,
        priority: 1,
      });
      return { status: "sent" };
    } catch (alertError) {
      logger.error({ job: run.jobId, err: alertError }, "cron-delivery-alert-failed");
      return { status: "failed", error: errorMessage(alertError) };
    }
  }
}
