import type { Logger } from "pino";
import { z } from "zod";
import { parseFallbackEntry } from "../config/sections/delivery.js";
import type { Clock } from "../core/clock.js";
import type { DeliveryEvent, EventPublisher } from "../core/events.js";
import type { AuthorityPort } from "../core/identity.js";
import type { ChannelAdapter } from "../core/types.js";
import { errorMessage } from "../lib/errors.js";
import { row } from "../lib/row.js";
import type { Store } from "../store/index.js";
import type { OutboxItem } from "../store/outbox.js";
import { TraceRepository } from "../store/trace.js";
import type { Notifier } from "./pushover.js";

export interface DeliveryFailoverDeps {
  store: Store;
  logger: Logger;
  clock: Clock;
  events: EventPublisher;
  /** The current settings (read at each failover: a reload applies to the next one). */
  settings: () => { fallback: readonly string[]; failoverAfterSecs: number };
  notifier: () => Notifier;
  adapters: () => ReadonlyMap<string, ChannelAdapter>;
  authority: () => AuthorityPort;
}

const failoverPath = row(z.object({ path: z.string().nullable() }), "failover path");
const copySchema = z.object({ path: z.string() });

/** The kv key of an item whose text already reached the owner another way (see `markSentElsewhere`). */
const copyKey = (outboxId: number) => `failover:copy:${outboxId}`;

/**
 * Records that an outbox item's text already reached the owner through `path` (an owner alert's phone copy): if the
 * item becomes undeliverable it is not failed over — the owner would get the same text twice. Written before the
 * item can be attempted (the alert queues its DM copy only once the phone answered).
 */
export function markSentElsewhere(kv: Store["kv"], outboxId: number, path: string): void {
  kv.set(copyKey(outboxId), { path });
}

/** The kv key of the other paths the same report goes out on (see `markAlsoSentVia`). */
const alsoKey = (outboxId: number) => `failover:also:${outboxId}`;
const alsoSchema = z.object({ paths: z.array(z.string()) });

/**
 * Records that the same report also goes out through `path` (a job's or trigger's own `deliver: {ntfy: true}`):
 * should the chat copy become undeliverable, that fallback path counts as delivered and nothing is sent on it
 * again — the owner would get the report twice there. Written right after the item is queued, before it can be
 * attempted; `sent: false` takes it back when that send failed, so the failover still tries the path. (A failover
 * that runs while the path's own send is still under way skips it too: a path that then fails is down for both.)
 */
export function markAlsoSentVia(kv: Store["kv"], outboxId: number, path: string, sent = true): void {
  const paths = new Set(kv.get(alsoKey(outboxId), alsoSchema)?.paths ?? []);
  if (sent) paths.add(path);
  else paths.delete(path);
  if (paths.size > 0) kv.set(alsoKey(outboxId), { paths: [...paths] });
  else kv.delete(alsoKey(outboxId));
}

/** Outbox origins that are never redirected: a pairing code or an approval prompt belongs to its chat alone. */
const NEVER_REDIRECTED = new Set(["pairing", "approval"]);

/**
 * DESIGN.md → Message flow → Delivery failover. An owner's undeliverable item — a job report, trigger delivery or
 * owner alert (no inbound message behind it), or a reply in an owner's direct chat — is sent through
 * `delivery.fallback`, tried in order, with its text (each provider cuts to its own limit) and its trace id. The
 * path that delivered (or that none did) is a `failover` trace row: `magpie trace`, the dashboard and `/metrics`
 * read it. A path the same report already went out on (`already`: the job's own delivery) is not sent again: its
 * row says so, and /metrics does not count it. A guest's chat is never redirected: a reply whose message came from anyone but an owner in a direct
 * chat stays where it was (readable in `magpie trace`).
 */
export class DeliveryFailover {
  /** Outbox items being failed over now (a retry event, a failed event and `deliveredVia` share one run). */
  private readonly running = new Map<number, Promise<void>>();
  private readonly trace: TraceRepository;

  constructor(private readonly deps: DeliveryFailoverDeps) {
    this.trace = new TraceRepository(deps.store.db);
  }

  /** Called with each delivery event: a failed item fails over; a retried one past the limit becomes undeliverable. */
  onDelivery(event: Pick<DeliveryEvent, "outboxId" | "status">): Promise<void> | undefined {
    if (event.status === "failed") return this.failOver(event.outboxId);
    if (event.status === "retry") return this.giveUpIfTooOld(event.outboxId);
    return undefined;
  }

  /**
   * The fallback path that delivered this failed item (`null`: every path failed; `undefined`: no failover for it —
   * no fallback list, a guest's chat, not failed). Waits for a failover under way, or runs it: the scheduler asks
   * before alerting, so a report that reached the owner through the fallback is not announced twice.
   */
  async deliveredVia(outboxId: number): Promise<string | null | undefined> {
    const item = this.deps.store.outbox.get(outboxId);
    if (
      !item ||
      item.status !== "failed" ||
      this.deps.settings().fallback.length === 0 ||
      !this.mayRedirect(item)
    )
      return undefined;
    await this.failOver(outboxId);
    const found = this.deps.store.db
      .prepare(
        "SELECT json_extract(data, '$.path') AS path FROM trace_events WHERE kind = 'failover' AND outbox_id = ? ORDER BY id DESC LIMIT 1",
      )
      .get(outboxId);
    return failoverPath.one(found)?.path;
  }

  /** May this item go through another path? Never for a guest's chat. */
  mayRedirect(item: OutboxItem): boolean {
    if (NEVER_REDIRECTED.has(item.origin)) return false;
    if (item.inboxId === null) return true; // a job report, trigger delivery or owner alert
    const inbound = this.deps.store.inbox.get(item.inboxId);
    if (!inbound) return false;
    const { message } = inbound;
    return (
      message.isDirect &&
      message.channel === item.target.channel &&
      message.chatId === item.target.chatId &&
      this.deps.authority().roleOf(message.channel, message.userId) === "owner"
    );
  }

  private async giveUpIfTooOld(outboxId: number): Promise<void> {
    const { store, clock, settings, events, logger } = this.deps;
    const item = store.outbox.get(outboxId);
    if (!item || item.status !== "pending" || settings().fallback.length === 0) return;
    const limitMs = settings().failoverAfterSecs * 1000;
    if (clock.now() - item.createdAt < limitMs || !this.mayRedirect(item)) return;
    const cause = `still failing after ${settings().failoverAfterSecs} s: ${item.lastError ?? "unknown error"}`;
    store.outbox.markFailed(item.id, cause);
    logger.warn({ outboxId: item.id, channel: item.target.channel }, "delivery-gave-up");
    if (item.inboxId !== null && (item.origin === "reply" || item.origin === "command")) {
      store.inbox.setOutcome([item.inboxId], "undeliverable", cause.slice(0, 300));
      events.messageOutcome({ inboxIds: [item.inboxId], outcome: "undeliverable", cause });
    }
    await this.failOver(item.id);
  }

  private failOver(outboxId: number): Promise<void> {
    const running = this.running.get(outboxId);
    if (running) return running;
    const run = this.runFailOver(outboxId).finally(() => this.running.delete(outboxId));
    this.running.set(outboxId, run);
    return run;
  }

  private async runFailOver(outboxId: number): Promise<void> {
    const { store, logger, clock, settings } = this.deps;
    const item = store.outbox.get(outboxId);
    const fallback = settings().fallback;
    if (!item || item.status !== "failed" || fallback.length === 0 || !this.mayRedirect(item)) return;
    // Once per item, across restarts: the kv claim is written before anything is sent (at most once).
    if (store.kv.has(`failover:${item.id}`)) return;
    store.kv.set(`failover:${item.id}`, { at: clock.now() });
    const copy = store.kv.get(copyKey(item.id), copySchema);
    if (copy) {
      // An owner alert whose phone copy went out: the owner has its text, and the phone is its own path, not a
      // failover (no trace row, not counted): nothing more is sent — one message per item.
      logger.info(
        { outboxId: item.id, from: `${item.target.channel}:${item.target.chatId}`, path: copy.path },
        "delivery-failover-not-needed",
      );
      return;
    }
    {
      const traceId = item.inboxId !== null ? `magpie trace ${item.inboxId}` : `outbox ${item.id}`;
      const from = `${item.target.channel}:${item.target.chatId}`;
      const text = `${item.message.text}\n\n— Magpie could not deliver this to ${from} (${(item.lastError ?? "refused").slice(0, 200)}). Trace: ${traceId}`;
      const tried: Array<{ path: string; error?: string }> = [];
      let delivered: string | null = null;
      const also = store.kv.get(alsoKey(item.id), alsoSchema)?.paths ?? [];
      let already: string | undefined;
      for (const path of fallback) {
        if (path === from) continue; // the path that just failed
        if (also.includes(path)) {
          // The same report already went out here (the job's own delivery): the owner has it, once.
          already = path;
          delivered = path;
          break;
        }
        try {
          await this.sendVia(path, text, from);
          tried.push({ path });
          delivered = path;
          break;
        } catch (error) {
          tried.push({ path, error: errorMessage(error).slice(0, 300) });
        }
      }
      this.trace.recordNow({
        at: clock.now(),
        kind: "failover",
        inboxId: item.inboxId,
        outboxId: item.id,
        channel: item.target.channel,
        chatId: item.target.chatId,
        data: {
          path: delivered,
          tried: tried.map((entry) => entry.path),
          errors: tried,
          ...(already ? { already } : {}),
        },
      });
      // A path that already had the report sent nothing: the row (with `already`) tells `deliveredVia` and the trace
      // so, and /metrics does not count it as a failover.
      if (already)
        logger.info({ outboxId: item.id, from, path: already }, "delivery-failover-already-delivered");
      else if (delivered) logger.warn({ outboxId: item.id, from, path: delivered }, "delivery-failed-over");
      else logger.error({ outboxId: item.id, from, tried }, "delivery-failover-exhausted");
    }
  }

  private async sendVia(path: string, text: string, from: string): Promise<void> {
    const parsed = parseFallbackEntry(path);
    if ("error" in parsed) throw new Error(parsed.error);
    if (parsed.kind !== "chat") {
      await this.deps
        .notifier()
        .send({ title: `Magpie: undeliverable to ${from}`, message: text, priority: 1 }, [parsed.kind]);
      return;
    }
    const adapter = this.deps.adapters().get(parsed.channel);
    if (!adapter) throw new Error(`channel "${parsed.channel}" is not running`);
    await adapter.send({ channel: parsed.channel, chatId: parsed.chatId }, { text, format: "plain" });
  }
}
