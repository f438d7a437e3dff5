import { createHash, timingSafeEqual } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { z } from "zod";
import { magpieEvents } from "../core/events.js";
import type { ChannelAdapter } from "../core/types.js";
import { row } from "../lib/row.js";
import type { Db } from "../store/index.js";
import { boundedLabel, LABEL_BOUNDS, type RegisteredNames } from "./metrics-labels.js";
import type { HttpApp } from "./server.js";

const pendingOutboxRow = row(
  z.object({ count: z.number(), oldest: z.number().nullable() }),
  "outbox pending",
);
const pendingCount = row(z.number(), "inbox pending count");
const failoverCounts = row(z.object({ path: z.string().nullable(), n: z.number() }), "failover count");

/** What the metrics read: the app's events (by app id), its database on scrape, its channels. */
export interface MetricsSources {
  /** The app id its events carry (`AppContext.events.app`). */
  app: string;
  db: Db;
  channels: () => ReadonlyMap<string, ChannelAdapter>;
  /** What may become a label value: everything else is `unknown` (metrics-labels.ts). */
  names: RegisteredNames;
  /** Milliseconds since the epoch (the app's clock), for the outbox's oldest item. */
  now: () => number;
  /** Told when a subscriber throws (never reaches the publisher). */
  onError?: (error: unknown) => void;
}

/** A registry of Magpie's metrics, fed by the event stream; `close` unsubscribes. */
export interface MagpieMetrics {
  readonly registry: Registry;
  render(): Promise<string>;
  close(): void;
}

/** How many inbox ids are remembered with their channel (for `magpie_messages_total{channel}`). */
const CHANNEL_MEMORY = 10_000;
const TURN_BUCKETS = [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600];
/** The event-loop heartbeat's interval. */
const LOOP_BEAT_MS = 100;

/**
 * Magpie's Prometheus metrics (DESIGN.md → CLI and HTTP): process metrics, counters fed by subscribing to
 * `magpieEvents` (nothing is counted in the core), and gauges read from the database when scraped. A registry
 * of its own per app, so two apps in one process (tests) never share a series.
 */
export function createMetrics(sources: MetricsSources): MagpieMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const { app, db, onError, names } = sources;
  // Every label value passes one of these: registered names only, a bound on each (metrics-labels.ts).
  const label = {
    channel: boundedLabel(LABEL_BOUNDS.channel, (name) => names.channel(name)),
    tool: boundedLabel(LABEL_BOUNDS.tool, (name) => names.tool(name)),
    model: boundedLabel(LABEL_BOUNDS.model, (name) => names.model(name)),
    trigger: boundedLabel(LABEL_BOUNDS.trigger, (name) => names.trigger(name)),
    // The scheduler publishes runs of the jobs in its store only: bounded, as one-shot jobs keep coming.
    job: boundedLabel(LABEL_BOUNDS.job),
    outcome: boundedLabel(LABEL_BOUNDS.fixed),
    origin: boundedLabel(LABEL_BOUNDS.fixed),
    verdict: boundedLabel(LABEL_BOUNDS.fixed),
    status: boundedLabel(LABEL_BOUNDS.fixed),
    result: boundedLabel(LABEL_BOUNDS.fixed),
  };

  const messages = new Counter({
    name: "magpie_messages_total",
    help: "Inbound messages by channel and outcome (answered, failed, interrupted, refused, undeliverable).",
    labelNames: ["channel", "outcome"] as const,
    registers: [registry],
  });
  const turnSeconds = new Histogram({
    name: "magpie_turn_seconds",
    help: "Duration of agent turns by origin.",
    labelNames: ["origin"] as const,
    buckets: TURN_BUCKETS,
    registers: [registry],
  });
  const llmRequests = new Counter({
    name: "magpie_llm_requests_total",
    help: "LLM requests by model, origin and result.",
    labelNames: ["model", "origin", "result"] as const,
    registers: [registry],
  });
  const llmTokens = new Counter({
    name: "magpie_llm_tokens_total",
    help: "LLM tokens by model and kind (prompt, completion).",
    labelNames: ["model", "kind"] as const,
    registers: [registry],
  });
  const llmCost = new Counter({
    name: "magpie_llm_cost_usd_total",
    help: "LLM cost in USD by model (priced calls only: llm.prices).",
    labelNames: ["model"] as const,
    registers: [registry],
  });
  const toolCalls = new Counter({
    name: "magpie_tool_calls_total",
    help: "Tool calls by tool and verdict.",
    labelNames: ["tool", "verdict"] as const,
    registers: [registry],
  });
  const cronRuns = new Counter({
    name: "magpie_cron_runs_total",
    help: "Due cron slots by job and outcome (ran, failed, missed, skipped).",
    labelNames: ["job", "status"] as const,
    registers: [registry],
  });
  const cronLag = new Gauge({
    name: "magpie_cron_lag_seconds",
    help: "How late the latest run of each job started after its due time.",
    labelNames: ["job"] as const,
    registers: [registry],
  });
  const triggerEvents = new Counter({
    name: "magpie_trigger_events_total",
    help: "Events reaching triggers by trigger and result.",
    labelNames: ["trigger", "result"] as const,
    registers: [registry],
  });

  const pendingInbox = db
    .prepare("SELECT COUNT(*) FROM inbox WHERE status IN ('pending', 'processing')")
    .pluck();
  const pendingOutbox = db
    .prepare("SELECT COUNT(*) AS count, MIN(created_at) AS oldest FROM outbox WHERE status = 'pending'")
    .bind();
  const readOutbox = () => pendingOutboxRow.only(pendingOutbox.get());
  new Gauge({
    name: "magpie_inbox_pending",
    help: "Inbound messages not yet finished (waiting or in a turn).",
    registers: [registry],
    collect() {
      this.set(db.open ? pendingCount.only(pendingInbox.get()) : 0);
    },
  });
  new Gauge({
    name: "magpie_outbox_pending",
    help: "Replies waiting to be delivered.",
    registers: [registry],
    collect() {
      this.set(db.open ? readOutbox().count : 0);
    },
  });
  new Gauge({
    name: "magpie_outbox_oldest_seconds",
    help: "Age of the oldest reply waiting to be delivered (0 when none waits).",
    registers: [registry],
    collect() {
      const oldest = db.open ? readOutbox().oldest : null;
      this.set(oldest === null ? 0 : Math.max(0, (sources.now() - oldest) / 1000));
    },
  });
  // Delivery failover writes one `failover` trace row per item (notify/delivery-failover.ts): counted from there,
  // so the count survives a restart (it shrinks only when retention prunes trace rows). A row marked `already` (the
  // report had reached the owner on that path by its own delivery) sent nothing: not a failover.
  const failoverRows = db.prepare(
    "SELECT json_extract(data, '$.path') AS path, COUNT(*) AS n FROM trace_events WHERE kind = 'failover' AND json_extract(data, '$.already') IS NULL GROUP BY path",
  );
  new Counter({
    name: "magpie_delivery_failovers_total",
    help: "Undeliverable items sent through delivery.fallback, by the path that delivered (none: every path failed).",
    labelNames: ["path"] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (!db.open) return;
      for (const row of failoverCounts.all(failoverRows.all())) {
        const kind = row.path === null ? "none" : (row.path.split(":")[0] ?? "none");
        const path = kind === "ntfy" || kind === "pushover" || kind === "none" ? kind : label.channel(kind);
        this.inc({ path }, row.n);
      }
    },
  });
  new Gauge({
    name: "magpie_channel_up",
    help: "1 while a channel is connected, else 0.",
    labelNames: ["channel"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [name, adapter] of sources.channels()) {
        this.set({ channel: label.channel(name) }, adapter.status().state === "connected" ? 1 : 0);
      }
    },
  });
  // A heartbeat on the loop: how late each beat comes is how long the loop was busy (perf_hooks'
  // monitorEventLoopDelay under-reports a single long stall).
  let lastBeat = performance.now();
  let worstLateMs = 0;
  const heartbeat = setInterval(() => {
    const now = performance.now();
    worstLateMs = Math.max(worstLateMs, now - lastBeat - LOOP_BEAT_MS);
    lastBeat = now;
  }, LOOP_BEAT_MS);
  heartbeat.unref();
  new Gauge({
    name: "magpie_event_loop_lag_seconds",
    help: "The longest event-loop delay seen since the previous scrape.",
    registers: [registry],
    collect() {
      // The stall going on now (this scrape waited for it) counts too.
      const current = performance.now() - lastBeat - LOOP_BEAT_MS;
      this.set(Math.max(0, worstLateMs, current) / 1000);
      worstLateMs = 0;
    },
  });

  // Inbox ids are published with their channel when received; outcomes name only the ids.
  const channelOf = new Map<number, string>();
  const unsubscribe = [
    magpieEvents.messageReceived.subscribe(
      app,
      (event) => {
        channelOf.set(event.inboxId, event.channel);
        if (channelOf.size > CHANNEL_MEMORY) channelOf.delete(channelOf.keys().next().value as number);
      },
      onError,
    ),
    magpieEvents.messageOutcome.subscribe(
      app,
      (event) => {
        for (const id of event.inboxIds) {
          messages.inc({
            channel: label.channel(channelOf.get(id) ?? ""),
            outcome: label.outcome(event.outcome),
          });
        }
      },
      onError,
    ),
    // A refused message never reaches the inbox: its verdict is its outcome (a stranger's pairing reply too).
    magpieEvents.accessDecided.subscribe(
      app,
      (event) => {
        if (event.verdict !== "allowed")
          messages.inc({ channel: label.channel(event.channel), outcome: "refused" });
      },
      onError,
    ),
    magpieEvents.turnFinished.subscribe(
      app,
      (event) => turnSeconds.observe({ origin: label.origin(event.origin) }, event.durationMs / 1000),
      onError,
    ),
    magpieEvents.llmCall.subscribe(
      app,
      (event) => {
        const model = label.model(event.model);
        llmRequests.inc({ model, origin: label.origin(event.origin), result: label.result(event.result) });
        if (event.promptTokens > 0) llmTokens.inc({ model, kind: "prompt" }, event.promptTokens);
        if (event.completionTokens > 0) llmTokens.inc({ model, kind: "completion" }, event.completionTokens);
        if (event.costUsd) llmCost.inc({ model }, event.costUsd);
      },
      onError,
    ),
    magpieEvents.toolCall.subscribe(
      app,
      (event) => toolCalls.inc({ tool: label.tool(event.tool), verdict: label.verdict(event.verdict) }),
      onError,
    ),
    magpieEvents.cronRun.subscribe(
      app,
      (event) => {
        const job = label.job(event.name);
        cronRuns.inc({ job, status: label.status(event.status) });
        if (event.status === "ran" || event.status === "failed") cronLag.set({ job }, event.lagSeconds);
      },
      onError,
    ),
    magpieEvents.triggerEvent.subscribe(
      app,
      (event) =>
        triggerEvents.inc({ trigger: label.trigger(event.trigger), result: label.result(event.result) }),
      onError,
    ),
  ];

  return {
    registry,
    render: () => registry.metrics(),
    close() {
      for (const stop of unsubscribe) stop();
      clearInterval(heartbeat);
      registry.clear();
    },
  };
}

/** True for 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (a dual-stack listener's view of 127.0.0.1). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const plain = address.startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
  return plain === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(plain);
}

/** Compares a presented bearer token with the configured one in constant time (digests of equal length). */
function tokenMatches(header: string | undefined, token: string): boolean {
  const presented = /^Bearer\s+(\S+)$/i.exec(header ?? "")?.[1];
  if (!presented) return false;
  const digest = (value: string) => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(presented), digest(token));
}

/**
 * `GET /metrics`: with a token every client must send it as a Bearer token (401 otherwise); without one only
 * loopback clients are served (403 for others — the peer's address, never a forwarded header, decides).
 */
export function registerMetricsRoute(
  app: HttpApp,
  metrics: MagpieMetrics,
  options: { token?: string; logger: Logger },
): void {
  app.get("/metrics", async (c) => {
    const peer = c.env.incoming.socket.remoteAddress;
    if (options.token) {
      if (!tokenMatches(c.req.header("authorization"), options.token)) {
        options.logger.warn({ peer }, "metrics-unauthorized");
        return c.text("unauthorized\n", 401, { "www-authenticate": 'Bearer realm="magpie-metrics"' });
      }
    } else if (!isLoopback(peer)) {
      options.logger.warn({ peer }, "metrics-refused-not-loopback");
      return c.text(
        "forbidden: /metrics answers loopback clients only unless http.metrics.token is set\n",
        403,
      );
    }
    return c.body(await metrics.render(), 200, { "content-type": metrics.registry.contentType });
  });
}
