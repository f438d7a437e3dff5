import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { vi } from "vitest";
import { systemClock } from "../../src/core/clock.js";
import type { EventPublisher } from "../../src/core/events.js";
import { type AuthorityPort, everyoneIsOwner } from "../../src/core/identity.js";
import type { Messenger } from "../../src/core/messenger.js";
import type { OutboundMessage, ReplyTarget } from "../../src/core/types.js";
import { createPushoverNotifier, type Notifier } from "../../src/notify/pushover.js";
import { createScheduler } from "../../src/scheduler/create-scheduler.js";
import type { Job } from "../../src/scheduler/job.js";
import type { JobExecutor } from "../../src/scheduler/job-executor.js";
import { JobStore } from "../../src/scheduler/job-store.js";
import type { Scheduler, SchedulerSettings } from "../../src/scheduler/scheduler.js";
import { Store } from "../../src/store/index.js";

export const CHAT: ReplyTarget = { channel: "telegram", chatId: "1001" };

/**
 * A Messenger that writes to the real outbox (as the app's does) and remembers what was sent. Like a
 * healthy outbox worker it marks items sent at once, unless `deliverAs` says "pending" or "failed".
 */
export class RecordingMessenger implements Messenger {
  readonly sent: Array<{ target: ReplyTarget; message: OutboundMessage; origin?: string; outboxId: number }> =
    [];
  deliverAs: "sent" | "pending" | "failed" = "sent";
  constructor(private readonly store: Store) {}
  send(target: ReplyTarget, message: OutboundMessage, origin?: Parameters<Messenger["send"]>[2]): number {
    const outboxId = this.store.outbox.enqueue(target, message, { origin });
    if (this.deliverAs === "sent") this.store.outbox.markSent(outboxId, [`m${outboxId}`]);
    if (this.deliverAs === "failed")
      this.store.outbox.markFailed(outboxId, "403: bot was blocked by the user");
    this.sent.push({ target, message, origin, outboxId });
    return outboxId;
  }
  async waitForDelivery(outboxId: number): Promise<"sent" | "failed" | "pending"> {
    return this.store.outbox.get(outboxId)?.status ?? "pending";
  }
}

/** An executor whose jobs answer from a script; `hold` makes runs wait until released. */
export class ScriptedExecutor implements JobExecutor {
  readonly calls: Array<{ job: Job; runId: number }> = [];
  result: { ok: boolean; output: string } = { ok: true, output: "done" };
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;
  hold(): void {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
  }
  release(): void {
    this.open?.();
    this.gate = null;
  }
  async execute(job: Job, runId: number, signal: AbortSignal): Promise<{ ok: boolean; output: string }> {
    this.calls.push({ job, runId });
    if (this.gate) {
      const gate = this.gate;
      await new Promise<void>((resolve, reject) => {
        void gate.then(resolve);
        signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
      });
    }
    return job.kind === "message" ? { ok: true, output: job.payload } : this.result;
  }
}

export interface Rig {
  dir: string;
  store: Store;
  jobs: JobStore;
  messenger: RecordingMessenger;
  executor: ScriptedExecutor;
  scheduler: Scheduler;
  notifier: Notifier;
  /** Stops the scheduler and closes the database (the directory stays, for restart tests). */
  shutdown(): Promise<void>;
  /** A new scheduler on the same database, as after a restart. */
  restart(settings?: Partial<SchedulerSettings>): Promise<Rig>;
  cleanup(): Promise<void>;
}

const quiet = pino({ level: "silent" });

/** A scheduler on a real SQLite file with a recording messenger and a scripted executor. */
export function makeRig(
  options: {
    settings?: Partial<SchedulerSettings>;
    dir?: string;
    notifier?: Notifier;
    executor?: ScriptedExecutor;
    /** Who may be posted to (default: everyone; authority tests pass a real `Authority`). */
    authority?: AuthorityPort;
    /** Where cron outcomes are published (default: nowhere). */
    events?: EventPublisher;
  } = {},
): Rig {
  const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), "magpie-sched-"));
  const store = Store.open(dir);
  const messenger = new RecordingMessenger(store);
  const executor = options.executor ?? new ScriptedExecutor();
  const notifier = options.notifier ?? createPushoverNotifier({});
  const settings: SchedulerSettings = {
    timezone: "UTC",
    catchUp: true,
    maxRunHistory: 50,
    runTimeoutMs: 60_000,
    pollMs: 15_000,
    ...options.settings,
  };
  const scheduler = createScheduler({
    db: store.db,
    outbox: store.outbox,
    messenger,
    notifier,
    executor,
    clock: systemClock,
    logger: quiet,
    settings,
    authority: () => options.authority ?? everyoneIsOwner,
    ...(options.events ? { events: options.events } : {}),
  });
  const rig: Rig = {
    dir,
    store,
    jobs: new JobStore(store.db),
    messenger,
    executor,
    scheduler,
    notifier,
    async shutdown() {
      await scheduler.stop();
      store.close();
    },
    async restart(overrides = {}) {
      await rig.shutdown();
      return makeRig({
        dir,
        notifier,
        settings: { ...settings, ...overrides },
        ...(options.authority ? { authority: options.authority } : {}),
        ...(options.events ? { events: options.events } : {}),
      });
    },
    async cleanup() {
      await rig.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return rig;
}

/** Advances fake time and lets the scheduler's async work (runs, deliveries) settle. */
export async function advance(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}
