import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import { ChannelSendError, errorMessage } from "../lib/errors.js";
import type { InboxRepository } from "../store/inbox.js";
import type { OutboxItem, OutboxRepository } from "../store/outbox.js";
import type { Clock } from "./clock.js";
import { type EventPublisher, NO_EVENTS } from "./events.js";
import type { ChannelAdapter } from "./types.js";

export interface OutboxWorkerOptions {
  outbox: OutboxRepository;
  /** The channel adapters (the app fills the map once, before delivery starts). */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  logger: Logger;
  clock: Clock;
  /** The app's publisher on the core event stream (default: publishes nothing). */
  events?: EventPublisher;
  /** Where a reply that could not be delivered marks its message `undeliverable` (when given). */
  inbox?: InboxRepository;
  /** Attempts before an item is marked failed (for a failure that may pass: and `retryForMs`). */
  maxAttempts?: number;
  /**
   * A failure that may pass (network, 5xx, 429) fails the item only once it is this old, whatever the attempts:
   * a platform outage of tens of minutes must not lose the replies queued before or during it (default 1 h).
   */
  retryForMs?: number;
  /** Also look for new items this often (written by another process, e.g. `magpie send`). */
  pollIntervalMs?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export interface OutboxEvents {
  "delivery-succeeded": [item: OutboxItem, platformMessageIds: string[]];
  "delivery-failed": [item: OutboxItem, error: string];
}

/**
 * Delivers outbox items: part by part with durable progress, in order per chat, retrying with exponential
 * back-off (honouring 429 retry-after), marking each sent with the platform ids — each part exactly once.
 */
export class OutboxWorker extends EventEmitter<OutboxEvents> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  /** Set by `stop()` (cleared by `start()`): a wait for delivery ends at once, nothing will deliver now. */
  private halted = false;
  /** Waits for delivery under way: `stop()` ends each with "pending" so none keeps a stopped process alive. */
  private readonly waiters = new Set<() => void>();
  private readonly maxAttempts: number;
  private readonly retryForMs: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly events: EventPublisher;
  /** Channels whose items are parked (told once in the log per stretch). */
  private readonly parked = new Set<string>();

  constructor(private readonly options: OutboxWorkerOptions) {
    super();
    this.events = options.events ?? NO_EVENTS;
    this.maxAttempts = options.maxAttempts ?? 10;
    this.retryForMs = options.retryForMs ?? 60 * 60_000;
    this.baseDelayMs = options.baseDelayMs ?? 1_000;
    // At most a minute between tries: a reply held by a platform outage goes out within a minute of its end.
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
  }

  /** Resolves when the outbox item is sent or finally failed ("pending" if `timeoutMs` passes first). */
  waitForDelivery(outboxId: number, timeoutMs: number): Promise<"sent" | "failed" | "pending"> {
    const current = this.options.outbox.get(outboxId);
    if (!current) return Promise.resolve("failed");
    if (current.status !== "pending") return Promise.resolve(current.status);
    // A report queued during shutdown (a cron run interrupted by the stop) goes out at the next start.
    if (this.halted) return Promise.resolve("pending");
    return new Promise((resolve) => {
      const finish = (status: "sent" | "failed" | "pending") => {
        clearTimeout(timer);
        this.waiters.delete(onStop);
        this.off("delivery-succeeded", onSent);
        this.off("delivery-failed", onFailed);
        resolve(status);
      };
      const onSent = (item: { id: number }) => item.id === outboxId && finish("sent");
      const onFailed = (item: { id: number }) => item.id === outboxId && finish("failed");
      const onStop = () => finish("pending");
      const timer = setTimeout(onStop, timeoutMs);
      this.waiters.add(onStop);
      this.on("delivery-succeeded", onSent);
      this.on("delivery-failed", onFailed);
    });
  }

  start(): void {
    this.stopped = false;
    this.halted = false;
    this.wake();
  }

  /** Runs a delivery pass now (coalesced with one already running). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.pass().finally(() => {
      this.running = null;
      if (this.again) {
        this.again = false;
        this.wake();
      } else this.scheduleNext();
    });
  }

  /** Waits until nothing is due now (or `timeoutMs` passes); true when the outbox has nothing pending. */
  async flush(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.running) await this.running;
      const nextDue = this.options.outbox.nextDueAt();
      if (nextDue === null) return true;
      if (nextDue > this.options.clock.now()) return false;
      this.wake();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return this.options.outbox.pendingCount() === 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.halted = true;
    clearTimeout(this.timer);
    if (this.running) await this.running;
    for (const end of [...this.waiters]) end();
  }

  private scheduleNext(): void {
    if (this.stopped) return;
    const nextDue = this.options.outbox.nextDueAt();
    const poll = this.options.pollIntervalMs ?? 2_000;
    const delay = nextDue === null ? poll : Math.max(0, Math.min(nextDue - this.options.clock.now(), poll));
    this.timer = setTimeout(() => this.wake(), delay);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    const due = this.options.outbox.due(this.options.clock.now(), 200);
    const byChannel = new Map<string, OutboxItem[]>();
    for (const item of due) {
      const list = byChannel.get(item.target.channel) ?? [];
      list.push(item);
      byChannel.set(item.target.channel, list);
    }
    const adapters = this.options.adapters;
    await Promise.all(
      [...byChannel].map(([channel, items]) =>
        adapters.has(channel) ? this.deliverInOrder(items) : this.park(channel, items),
      ),
    );
  }

  private async deliverInOrder(items: OutboxItem[]): Promise<void> {
    const blockedChats = new Set<string>();
    for (const item of items) {
      const chat = `${item.target.chatId}:${item.target.threadId ?? ""}`;
      if (blockedChats.has(chat)) continue; // keep per-chat order behind a failed item
      const delivered = await this.deliver(item);
      if (!delivered) blockedChats.add(chat);
    }
  }

  /**
   * Items whose channel has no running adapter (removed by a config reload, or between a restart's stop and start):
   * they stay pending without an attempt counted — never failed or undeliverable for that alone — and go out when the
   * channel runs again (`resumeChannel`), or are looked at again after the longest back-off.
   */
  private async park(channel: string, items: OutboxItem[]): Promise<void> {
    const { outbox, logger, clock } = this.options;
    if (!this.parked.has(channel))
      logger.warn({ channel, items: items.length }, "outbox-channel-not-running");
    this.parked.add(channel);
    const reason = `Channel "${channel}" is not running; kept until it is.`;
    for (const item of items) outbox.postpone(item.id, reason, clock.now() + this.maxDelayMs);
  }

  /** A channel (re)started: its parked items are due now. */
  resumeChannel(channel: string): void {
    this.parked.delete(channel);
    this.options.outbox.resumeChannel(channel, this.options.clock.now());
    this.wake();
  }

  private async deliver(item: OutboxItem): Promise<boolean> {
    const { outbox, logger } = this.options;
    const adapter = this.options.adapters.get(item.target.channel);
    try {
      if (!adapter) {
        // Removed while this pass ran: a retry like any other (the next pass parks it).
        throw new ChannelSendError(`Channel "${item.target.channel}" is not running.`, {
          code: "channel.unavailable",
        });
      }
      const ids = [...item.platformMessageIds];
      const result = await adapter.send(item.target, item.message, {
        partsSent: item.partsSent,
        onPartSent: (index, platformId) => {
          ids[index] = platformId;
          outbox.recordPart(item.id, index, platformId);
        },
      });
      // Parts delivered in earlier attempts keep their recorded ids; the adapter reports the rest.
      const length = Math.max(ids.length, result.messageIds.length);
      const allIds = Array.from(
        { length },
        (_, index) => ids[index] ?? result.messageIds[index] ?? "",
      ).filter(Boolean);
      outbox.markSent(item.id, allIds);
      logger.debug(
        { outboxId: item.id, channel: item.target.channel, parts: allIds.length },
        "message-delivered",
      );
      this.emit("delivery-succeeded", item, allIds);
      this.events.delivery({
        outboxId: item.id,
        ...(item.inboxId !== null ? { inboxId: item.inboxId } : {}),
        channel: item.target.channel,
        chatId: item.target.chatId,
        status: "sent",
        attempts: item.attempts + 1,
        platformMessageIds: allIds,
      });
      return true;
    } catch (error) {
      const attempts = item.attempts + 1;
      const text = errorMessage(error);
      const permanent = error instanceof ChannelSendError && error.permanent;
      const exhausted =
        attempts >= this.maxAttempts && this.options.clock.now() - item.createdAt >= this.retryForMs;
      if (permanent || exhausted) {
        outbox.markFailed(item.id, text);
        logger.error(
          {
            outboxId: item.id,
            channel: item.target.channel,
            chatId: item.target.chatId,
            attempts,
            error: text,
          },
          "message-delivery-failed",
        );
        this.emit("delivery-failed", { ...item, status: "failed", attempts, lastError: text }, text);
        // A reply (not a notice about something else) that can't be delivered: its message ends undeliverable.
        if (
          item.inboxId !== null &&
          (item.origin === "reply" || item.origin === "command") &&
          this.options.inbox
        ) {
          const cause = permanent
            ? `refused by ${item.target.channel}: ${text}`
            : `${attempts} attempts: ${text}`;
          try {
            this.options.inbox.setOutcome([item.inboxId], "undeliverable", cause.slice(0, 300));
            this.events.messageOutcome({ inboxIds: [item.inboxId], outcome: "undeliverable", cause });
          } catch (outcomeError) {
            logger.error({ err: outcomeError, outboxId: item.id }, "outcome-write-failed");
          }
        }
        this.publishFailure(item, "failed", attempts, text);
        return true; // a failed item no longer blocks its chat
      }
      const retryAfter = error instanceof ChannelSendError ? error.retryAfterMs : undefined;
      const backoff = Math.min(this.baseDelayMs * 2 ** (attempts - 1), this.maxDelayMs);
      const delay = retryAfter !== undefined ? Math.max(retryAfter, 0) : backoff;
      outbox.markRetry(item.id, text, this.options.clock.now() + delay);
      logger.warn(
        { outboxId: item.id, channel: item.target.channel, attempts, retryInMs: delay, error: text },
        "message-delivery-retry",
      );
      this.publishFailure(item, "retry", attempts, text);
      return false;
    }
  }

  private publishFailure(
    item: OutboxItem,
    status: "retry" | "failed",
    attempts: number,
    error: string,
  ): void {
    this.events.delivery({
      outboxId: item.id,
      ...(item.inboxId !== null ? { inboxId: item.inboxId } : {}),
      channel: item.target.channel,
      chatId: item.target.chatId,
      status,
      attempts,
      platformMessageIds: item.platformMessageIds.filter(Boolean),
      error,
    });
  }
}
