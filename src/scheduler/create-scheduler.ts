import type { Logger } from "pino";
import type { Clock } from "../core/clock.js";
import type { EventPublisher } from "../core/events.js";
import type { AuthorityPort } from "../core/identity.js";
import type { Messenger } from "../core/messenger.js";
import type { Notifier } from "../notify/pushover.js";
import type { Db, Store } from "../store/index.js";
import type { OutboxRepository } from "../store/outbox.js";
import { RunDelivery } from "./delivery.js";
import type { JobExecutor } from "./job-executor.js";
import { JobStore } from "./job-store.js";
import { Scheduler, type SchedulerSettings } from "./scheduler.js";

const DEFAULT_MESSAGE_LENGTH = 4000;

/** Wires a scheduler from its ports: database, outbox, messenger, notifier, executor, clock and authority. */
export function createScheduler(options: {
  db: Db;
  outbox: OutboxRepository;
  messenger: Messenger;
  notifier: Notifier;
  executor: JobExecutor;
  clock: Clock;
  logger: Logger;
  settings: SchedulerSettings;
  maxMessageLength?: (channel: string) => number | undefined;
  /** Who may be posted to (read at each check, so the access feature may install it later). */
  authority: () => AuthorityPort;
  /** Where each due slot's outcome is published. */
  events?: EventPublisher;
  /** The delivery-failover lookup (read at settle time): a report it delivered gets no separate alert. */
  failover?: () => ((outboxId: number) => Promise<string | null | undefined>) | undefined;
  /** Where a report's chat copy records the phone paths it also went out on (see RunDelivery). */
  kv?: Store["kv"];
}): Scheduler {
  const jobs = new JobStore(options.db);
  const delivery = new RunDelivery({
    jobs,
    outbox: options.outbox,
    messenger: options.messenger,
    notifier: options.notifier,
    logger: options.logger,
    maxMessageLength: (channel) => options.maxMessageLength?.(channel) ?? DEFAULT_MESSAGE_LENGTH,
    authority: options.authority,
    ...(options.failover ? { failover: options.failover } : {}),
    ...(options.kv ? { kv: options.kv } : {}),
  });
  return new Scheduler({
    jobs,
    executor: options.executor,
    delivery,
    clock: options.clock,
    logger: options.logger,
    settings: options.settings,
    authority: options.authority,
    ...(options.events ? { events: options.events } : {}),
  });
}
