import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { ConsoleChannel } from "../../channels/console.js";
import { deepFreeze, type LiveSource, liveConfigView, liveValue } from "../config/live.js";
import type { MagpieConfig } from "../config/schema.js";
import type { AgentDirectory } from "../core/agents.js";
import { type Clock, systemClock } from "../core/clock.js";
import { CommandRegistry } from "../core/commands.js";
import { type EventPublisher, eventPublisher } from "../core/events.js";
import type { OutboxWorker } from "../core/outbox-worker.js";
import type { Router } from "../core/router.js";
import type { Subagents } from "../core/subagents.js";
import type { ChannelAdapter } from "../core/types.js";
import { registerHealthRoutes } from "../http/health.js";
import { EventLoopMonitor } from "../http/loop-monitor.js";
import { HttpServer } from "../http/server.js";
import type { ChatModel } from "../llm/types.js";
import type { Redactor } from "../log/redact.js";
import { requireSandboxStatus, type SandboxStatus } from "../security/sandbox.js";
import { HostAllowList } from "../security/ssrf-address.js";
import type { Store } from "../store/index.js";
import type { ToolRegistry } from "../tools/registry.js";
import { applyReload, type ReloadResult } from "./apply-reload.js";
import { orderFeatures } from "./assemble.js";
import { type AppOptions, type AppPorts, type BaseParts, buildBase, featureDeps } from "./base-parts.js";
import { buildCore } from "./build-core.js";
import { BUILT_IN_PORTS, defaultPorts } from "./default-ports.js";
import type { Contribution, FeatureDeps, MagpieFeature } from "./feature.js";
import { features as defaultFeatures } from "./features.js";
import { warmUp } from "./warm-up.js";

export type { AppOptions, ReloadResult };

/** How long after ready background start-up work waits, so the first requests are served first. */
const AFTER_READY_DELAY_MS = 300;

/**
 * The composition root: builds the shared parts (src/app/base-parts.ts), sets the features up in the order of
 * what they need and provide, builds the core from their contributions (src/app/build-core.ts), then connects.
 */
export class MagpieApp {
  /** The live config's view: a reload replaces the frozen config behind it. */
  readonly config: MagpieConfig;
  readonly clock: Clock;
  /** This app's publisher on the core event stream (a random app id: two apps in one process never mix). */
  readonly events: EventPublisher;
  readonly commands = new CommandRegistry();
  readonly http: HttpServer;
  /** Whether the event loop keeps turning (`/healthz`). */
  readonly loop: EventLoopMonitor;
  readonly adapters = new Map<string, ChannelAdapter>();
  /** What every feature is handed (`setup(config, deps)`). */
  readonly context: FeatureDeps;
  /** The features in set-up order (by what they need and provide). */
  readonly features: readonly MagpieFeature[];
  /** Built in `start()` from the features' ports (ready values, no late binding). */
  router!: Router;
  subagents!: Subagents;
  readonly logger: Logger;
  readonly store: Store;
  readonly redactor: Redactor;
  readonly model: ChatModel | null;
  readonly tools: ToolRegistry;
  readonly agents: AgentDirectory;
  readonly outbox: OutboxWorker;
  private readonly base: BaseParts;
  private readonly live: LiveSource<MagpieConfig>;
  private readonly ports: AppPorts;
  private readonly contributions: Contribution[] = [];
  private readonly stopTasks: Array<() => void | Promise<void>> = [];
  private readonly options: Omit<AppOptions, "config">;
  private started = false;
  private sandbox: SandboxStatus | null = null;
  private stopping: Promise<void> | null = null;
  private reloading: Promise<unknown> = Promise.resolve();

  constructor({ config: loaded, ...options }: AppOptions) {
    this.options = options;
    this.live = liveValue(deepFreeze(loaded));
    this.config = liveConfigView(this.live);
    this.clock = options.clock ?? systemClock;
    this.events = eventPublisher(randomUUID(), () => this.clock.now());
    const ports = defaultPorts(options);
    this.ports = ports;
    const names = defaultFeatures.map((feature) => feature.name);
    this.features = orderFeatures(options.features ?? defaultFeatures, BUILT_IN_PORTS, names);
    const { clock, events, adapters } = this;
    this.base = buildBase(this.config, options, { ports, clock, events, adapters });
    const { logger, store, redactor, model, tools, agents, outbox } = this.base;
    [this.logger, this.store, this.redactor, this.model] = [logger, store, redactor, model];
    [this.tools, this.agents, this.outbox] = [tools, agents, outbox];
    this.http = new HttpServer(logger);
    this.loop = new EventLoopMonitor({
      maxBlockMs: this.config.http.maxEventLoopBlockMs,
      onBlock: (blockedMs) => logger.warn({ blockedMs }, "event-loop-blocked"),
    });
    registerHealthRoutes(this.http.app, {
      store,
      adapters: () => adapters,
      started: () => this.started,
      loop: this.loop,
    });
    const router = () => this.router;
    this.context = featureDeps(this.base, { clock, events, adapters, ports, router });
  }

  /** Sets up features, connects channels, recovers unfinished work and starts delivery. */
  async start(): Promise<void> {
    const { config, logger, context } = this;
    // A bad entry stops start-up here rather than at the first web_fetch; the owner's opening is logged once.
    const allowHosts = new HostAllowList(config.security.ssrf.allowHosts);
    if (!allowHosts.isEmpty) logger.info({ allowHosts: allowHosts.entries }, "ssrf-allow-hosts");
    // The probe (one bwrap run, a few ms) overlaps feature set-up; `bwrap` mode without bwrap stops start-up.
    const sandbox = requireSandboxStatus(config.tools.shell);
    sandbox.catch(() => {});
    for (const feature of this.features) this.contribute(await feature.setup(config, context));
    const { base, live, ports, clock, events, commands, adapters, contributions } = this;
    const sandboxStatus = () => this.sandbox;
    const core = buildCore({
      base,
      live,
      ports,
      clock,
      events,
      commands,
      adapters,
      contributions,
      logger,
      sandbox: sandboxStatus,
    });
    this.router = core.router;
    this.subagents = core.subagents;
    this.stopTasks.push(() => core.subagents.shutdown());
    this.sandbox = await sandbox;
    logger[this.sandbox.active ? "info" : "warn"](this.sandbox, "sandbox");
    if (this.options.listen !== false) {
      this.loop.start();
      const address = await this.http.listen(config.http.port, config.http.host);
      logger.info({ host: address.address, port: address.port }, "http-listening");
    }
    const connecting = [...(this.options.adapters ?? []), ...contributions.flatMap((c) => c.channels ?? [])];
    if (this.options.loadChannels !== false) {
      const { loadChatChannels } = await import("../../channels/index.js");
      connecting.push(...(await loadChatChannels({ config, logger, http: this.http, store: this.store })));
    }
    const { console } = this.options;
    if (console) connecting.push(console instanceof ConsoleChannel ? console : new ConsoleChannel());
    for (const adapter of connecting) this.adapters.set(adapter.name, adapter);
    const tasks = contributions.flatMap((contribution) => (contribution.warmUp ? [contribution.warmUp] : []));
    const { model, tools, http } = this;
    try {
      // The first requests are on their way: warm up while their answers travel.
      await Promise.all([
        Promise.all(connecting.map((adapter) => adapter.start(core.router))),
        warmUp({ model, tools, http, timezone: config.timezone, logger, tasks }),
      ]);
    } catch (error) {
      await this.stop();
      throw error;
    }
    core.router.recover();
    core.subagents.recover();
    this.outbox.start();
    for (const feature of this.features) this.contribute(await feature.start?.(config, context));
    this.started = true;
    // Background work that must not slow reaching ready (MCP servers): it begins a moment after ready.
    const timer = setTimeout(() => {
      for (const { afterReady } of contributions) {
        if (!afterReady) continue;
        Promise.resolve()
          .then(afterReady)
          .catch((error: unknown) => logger.error({ err: error }, "after-ready-task-failed"));
      }
    }, AFTER_READY_DELAY_MS);
    timer.unref();
    this.stopTasks.push(() => clearTimeout(timer));
    const ready = { channels: [...this.adapters.keys()], model: model ? config.llm.model : null };
    logger.info({ ...ready, tools: tools.enabledNames().length }, "magpie-ready");
  }

  /** Takes a contribution: its ports replace the defaults, its routes are served, its stop task joins the others. */
  private contribute(contribution: void | Contribution): void {
    if (!contribution) return;
    this.contributions.push(contribution);
    const { access, approvals, authority, spend, stop, routes, pages, commands } = contribution;
    if (access) this.ports.access = access;
    if (approvals) this.ports.approvals = approvals;
    if (authority) this.ports.authority = authority;
    if (spend) this.ports.spend = spend;
    if (stop) this.stopTasks.push(stop);
    for (const { method, path, handler } of routes ?? []) this.http.route(method, path, handler);
    if (pages) this.http.app.route("/", pages);
    // Set-up's commands are registered with the core's (in order); a later contribution's at once.
    if (commands && this.router) this.commands.register(...commands);
  }

  get isReady(): boolean {
    return (
      this.started && [...this.adapters.values()].every((adapter) => adapter.status().state === "connected")
    );
  }

  /** Applies a valid config live, one reload at a time (src/app/apply-reload.ts). */
  reload(next: MagpieConfig): Promise<ReloadResult> {
    const { live, config, redactor, agents, features, context: deps, logger, options } = this;
    const { adapters, router: sink, http, store, outbox } = this;
    const channels =
      options.loadChannels !== false ? () => ({ adapters, config, sink, logger, http, store, outbox }) : null;
    const env = options.env ?? process.env;
    const parts = { live, config, redactor, env, agents, features, deps, logger, channels };
    const run = this.reloading.then(() => applyReload(parts, next));
    this.reloading = run.catch(() => {});
    return run;
  }

  /** Graceful stop: no new turns, running turns finish or are checkpointed, outbox flushed, database closed. */
  stop(graceMs = 6_000): Promise<void> {
    this.stopping ??= this.shutdown(graceMs);
    return this.stopping;
  }

  private async shutdown(graceMs: number): Promise<void> {
    this.started = false;
    // A start that failed before the core was built (a bad allowHosts entry, a feature's set-up) has no router.
    const router: Router | undefined = this.router;
    if (router) await router.queues.shutdown(graceMs);
    await this.outbox.flush(2_000);
    await this.outbox.stop();
    for (const task of [...this.stopTasks].reverse()) {
      try {
        await task();
      } catch (error) {
        this.logger.warn({ err: error }, "stop-task-failed");
      }
    }
    await Promise.allSettled([...this.adapters.values()].map((adapter) => adapter.stop()));
    await this.http.close();
    this.loop.stop();
    this.store.close();
    this.logger.info("magpie-stopped");
  }
}
