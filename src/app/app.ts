import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Logger } from "pino";
import { ConsoleChannel } from "../../channels/console.js";
import {
  type ConfigChange,
  diffConfig,
  isRestartOnly,
  withRestartOnlyKept,
} from "../config/config-change.js";
import { deepFreeze, type LiveSource, liveConfigView, liveMap, liveValue } from "../config/live.js";
import type { MagpieConfig } from "../config/schema.js";
import type { AccessControl } from "../core/access.js";
import { AgentDirectory } from "../core/agents.js";
import type { ApprovalGate } from "../core/approvals.js";
import { denyAllApprovals } from "../core/approvals.js";
import { builtinCommands } from "../core/builtin-commands.js";
import { type Clock, systemClock } from "../core/clock.js";
import { CommandRegistry } from "../core/commands.js";
import { Delegation } from "../core/delegation.js";
import { type EventPublisher, eventPublisher } from "../core/events.js";
import type { AuthorityPort } from "../core/identity.js";
import type { MediaContext, MediaPort } from "../core/media.js";
import type { Messenger } from "../core/messenger.js";
import { modelCommand } from "../core/model-command.js";
import { OutboxWorker } from "../core/outbox-worker.js";
import { Router, type RouterSettings } from "../core/router.js";
import type { SpendPort, SpendScope } from "../core/spend.js";
import { Subagents } from "../core/subagents.js";
import { clockLine } from "../core/system-prompt.js";
import type { ChannelAdapter } from "../core/types.js";
import { registerHealthRoutes } from "../http/health.js";
import { EventLoopMonitor } from "../http/loop-monitor.js";
import { HttpServer } from "../http/server.js";
import { wallTimeAt } from "../lib/zoned-time.js";
import { createChatModel } from "../llm/create-model.js";
import { redactingModel } from "../llm/redacting-model.js";
import { createTranscriber } from "../llm/transcriber.js";
import type { ChatModel } from "../llm/types.js";
import { createLogger } from "../log/logger.js";
import { createRedactor, type Redactor } from "../log/redact.js";
import { MediaPreparer } from "../media/media-preparer.js";
import { createPhoneNotifier } from "../notify/phone.js";
import { requireSandboxStatus, type SandboxStatus } from "../security/sandbox.js";
import { HostAllowList } from "../security/ssrf-address.js";
import { Store } from "../store/index.js";
import { TaskRepository } from "../store/tasks.js";
import { type Tool, ToolError } from "../tools/define-tool.js";
import { builtinTools } from "../tools/index.js";
import { ToolRegistry } from "../tools/registry.js";
import { SpillStore } from "../tools/spill.js";
import { orderFeatures } from "./assemble.js";
import { type ChannelReloadDeps, reloadChannels } from "./channel-reload.js";
import type { AppContext, Contribution, MagpieFeature, PortName } from "./feature.js";
import { features as defaultFeatures } from "./features.js";

/** What a reload did: applied key paths, those that need a restart, and any feature that failed to take over. */
export interface ReloadResult {
  applied: string[];
  needsRestart: string[];
  failures: Array<{ part: string; error: string }>;
}

export interface AppOptions {
  config: MagpieConfig;
  logger?: Logger;
  clock?: Clock;
  /** Load the chat channels enabled in config (Telegram, Discord, Slack). Default true. */
  loadChannels?: boolean;
  /** Add the terminal console channel. */
  console?: boolean | ConsoleChannel;
  /** Extra adapters (tests). */
  adapters?: ChannelAdapter[];
  /** Features to set up (default: every feature in src/app/features.ts). */
  features?: MagpieFeature[];
  /** Extra tools (tests). */
  extraTools?: Tool[];
  /** A chat model to use instead of the configured OpenAI-compatible one (tests, benchmarks). */
  model?: ChatModel | null;
  /** Access control to use instead of the default (tests); a feature may still replace it. */
  access?: AccessControl;
  /** Who counts as an owner, instead of the console-only default (tests); the access feature replaces it. */
  authority?: AuthorityPort;
  /** Listen on http.host:http.port (default true). */
  listen?: boolean;
  env?: NodeJS.ProcessEnv;
}

/** Until the channels feature installs real access control: the local console only. */
const consoleOnlyAccess: AccessControl = {
  check: (message) =>
    message.channel === "console"
      ? { allow: true }
      : { allow: false, reason: "access control not configured" },
  allowsPress: (press) => press.channel === "console",
};

/** Until the access feature installs the real one: only the local console's user is an owner. */
const consoleOnlyAuthority: AuthorityPort = {
  roleOf: (channel) => (channel === "console" ? "owner" : "guest"),
  mayDeliver: (current, target) =>
    target.channel === "console" ||
    (current !== null && current.channel === target.channel && current.chatId === target.chatId),
};

/** The ports the app itself provides (with a default): a feature may replace them, none has to. */
const BUILT_IN_PORTS: readonly PortName[] = ["notifier", "access", "authority", "approvals"];

/** How long after ready background start-up work waits, so the first requests are served first. */
const AFTER_READY_DELAY_MS = 300;

/** The composition root: builds store, tools, router, outbox, channels and features from config. */
export class MagpieApp {
  readonly config: MagpieConfig;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly store: Store;
  readonly redactor: Redactor;
  readonly model: ChatModel | null;
  readonly tools: ToolRegistry;
  readonly commands = new CommandRegistry();
  readonly agents: AgentDirectory;
  readonly outbox: OutboxWorker;
  /** Built in `start()` from the features' ports (ready values, no late binding). */
  router!: Router;
  subagents!: Subagents;
  /** The app's ports: built-in defaults, replaced by what the features contribute (in set-up order). */
  private readonly ports: {
    access: AccessControl;
    approvals: ApprovalGate;
    authority: AuthorityPort;
    spend: SpendPort | null;
  };
  readonly http: HttpServer;
  /** Whether the event loop keeps turning (`/healthz`). */
  readonly loop: EventLoopMonitor;
  readonly adapters = new Map<string, ChannelAdapter>();
  readonly context: AppContext;
  /** This app's publisher on the core event stream (a random app id: two apps in one process never mix). */
  readonly events: EventPublisher;
  private readonly services: AppContext["services"];

  /** The loaded config (frozen); a reload replaces it, and `config` reads through to the current one. */
  private readonly live: LiveSource<MagpieConfig>;
  /** The features in set-up order (by what they need and provide). */
  readonly features: readonly MagpieFeature[];
  /** What the features contributed, in set-up order. */
  private readonly contributions: Contribution[] = [];
  private readonly stopTasks: Array<() => void | Promise<void>> = [];
  private readonly media: MediaPort | null;
  private started = false;
  private sandbox: SandboxStatus | null = null;
  private stopping: Promise<void> | null = null;
  private reloading: Promise<unknown> = Promise.resolve();

  /** The options without the config: the loaded config lives in `live` only (a reload releases it). */
  private readonly options: Omit<AppOptions, "config">;

  constructor({ config: loaded, ...options }: AppOptions) {
    this.options = options;
    this.live = liveValue(deepFreeze(loaded));
    const config = liveConfigView(this.live);
    this.config = config;
    this.clock = options.clock ?? systemClock;
    this.events = eventPublisher(randomUUID(), () => this.clock.now());
    this.ports = {
      access: options.access ?? consoleOnlyAccess,
      approvals: denyAllApprovals,
      authority: options.authority ?? consoleOnlyAuthority,
      spend: null,
    };
    this.features = orderFeatures(
      options.features ?? defaultFeatures,
      BUILT_IN_PORTS,
      defaultFeatures.map((feature) => feature.name),
    );
    this.redactor = createRedactor(config, options.env ?? process.env);
    this.logger = options.logger ?? createLogger({ redactor: this.redactor });
    this.store = Store.open(config.dataDir);
    // File and shell tools (and shell cron jobs) work inside the workspace: it exists from the first start.
    mkdirSync(config.workspace, { recursive: true });
    const model =
      options.model !== undefined
        ? options.model
        : createChatModel(config, { logger: this.logger, now: () => this.clock.now() });
    this.model = model ? redactingModel(model, this.redactor) : null;
    // Photos and voice notes for the model: only when there is a model to take them.
    this.media = this.model
      ? new MediaPreparer({
          vision: config.llm.vision,
          transcribe: createTranscriber(config),
          transcriptionModel: config.llm.transcriptionModel,
          logger: this.logger,
          // A transcription is a call of the turn it is for, under that turn's budgets.
          beforeCall: (context) => this.ports.spend?.beforeCall(mediaScope(context)) ?? { allowed: true },
          onUsage: (usage, context) => this.ports.spend?.record(mediaScope(context), usage),
        })
      : null;

    const spill = new SpillStore(path.join(config.dataDir, "spill"), config.tools.spillThresholdChars);
    // The phone notifier (Pushover, ntfy) is built once: the scheduler, budgets, alerts and triggers share it.
    const notifier = createPhoneNotifier(config.notify);
    const services: AppContext["services"] = { store: this.store, redactor: this.redactor, spill, notifier };
    this.services = services;
    this.tools = new ToolRegistry({
      config,
      logger: this.logger,
      services,
      events: this.events,
      approvals: {
        request: (request) => this.ports.approvals.request(request),
        ask: (request) =>
          this.ports.approvals.ask
            ? this.ports.approvals.ask(request)
            : Promise.reject(
                new ToolError("question.unavailable", "Questions are not available in this Magpie."),
              ),
      },
      spill,
    });
    this.tools.register(...builtinTools, ...(options.extraTools ?? []));
    this.agents = new AgentDirectory(config.agents, config.routes, config.llm.model);
    this.outbox = new OutboxWorker({
      outbox: this.store.outbox,
      adapters: this.adapters,
      logger: this.logger,
      clock: this.clock,
      events: this.events,
      inbox: this.store.inbox,
    });
    this.commands.register(
      ...builtinCommands({
        commands: this.commands,
        store: this.store,
        agents: this.agents,
        adapters: () => this.adapters,
        modelName: this.model ? config.llm.model : null,
        uptimeMs: () => this.router.uptimeMs,
        queueStats: () => ({
          running: this.router.slots.running,
          paused: this.router.slots.pausedCount,
          waiting: this.router.queues.stats().waiting,
        }),
        stop: (sessionKey) => this.router.stop(sessionKey),
        onReset: (sessionKey) => {
          this.tools.scratch.clear(sessionKey);
          for (const { onSessionReset } of this.contributions) {
            if (!onSessionReset) continue;
            Promise.resolve()
              .then(() => onSessionReset(sessionKey))
              .catch((error: unknown) => this.logger.warn({ err: error }, "session-reset-listener-failed"));
          }
        },
        sandbox: () => this.sandbox,
        tasks: {
          cancel: (sessionKey, id) => this.subagents.cancel(sessionKey, id),
          cancelSession: (sessionKey) => this.subagents.cancelSession(sessionKey),
          list: (sessionKey) => this.subagents.list(sessionKey),
        },
        clock: this.clock,
      }),
    );
    this.commands.register(
      modelCommand({
        kv: this.store.kv,
        agents: this.agents,
        primary: this.model ? config.llm.model : null,
        fallbacks: config.llm.fallbacks.map((entry) => entry.model),
      }),
    );
    this.http = new HttpServer(this.logger);
    this.loop = new EventLoopMonitor({
      maxBlockMs: config.http.maxEventLoopBlockMs,
      onBlock: (blockedMs) => this.logger.warn({ blockedMs }, "event-loop-blocked"),
    });
    registerHealthRoutes(this.http.app, {
      store: this.store,
      adapters: () => this.adapters,
      started: () => this.started,
      loop: this.loop,
    });
    this.context = this.createContext();
  }

  /** Sets up features, connects channels, recovers unfinished work and starts delivery. */
  async start(): Promise<void> {
    const { config, logger } = this;
    // A bad entry stops start-up here rather than at the first web_fetch; the owner's opening is logged once.
    const allowHosts = new HostAllowList(config.security.ssrf.allowHosts);
    if (!allowHosts.isEmpty) logger.info({ allowHosts: allowHosts.entries }, "ssrf-allow-hosts");
    // The probe (one bwrap run, a few ms) overlaps feature set-up; `bwrap` mode without bwrap stops start-up.
    const sandbox = requireSandboxStatus(config.tools.shell);
    sandbox.catch(() => {});
    for (const feature of this.features) this.contribute(await feature.setup(this.context));
    this.buildCore();
    this.sandbox = await sandbox;
    if (this.sandbox.active) logger.info(this.sandbox, "sandbox");
    else logger.warn(this.sandbox, "sandbox");
    if (this.options.listen !== false) {
      this.loop.start();
      const address = await this.http.listen(config.http.port, config.http.host);
      logger.info({ host: address.address, port: address.port }, "http-listening");
    }
    const adapters: ChannelAdapter[] = [
      ...(this.options.adapters ?? []),
      ...this.contributions.flatMap((contribution) => contribution.channels ?? []),
    ];
    if (this.options.loadChannels !== false) {
      const { loadChatChannels } = await import("../../channels/index.js");
      adapters.push(...(await loadChatChannels({ config, logger, http: this.http, store: this.store })));
    }
    if (this.options.console) {
      adapters.push(
        this.options.console instanceof ConsoleChannel ? this.options.console : new ConsoleChannel(),
      );
    }
    for (const adapter of adapters) this.adapters.set(adapter.name, adapter);
    try {
      const connecting = Promise.all(adapters.map((adapter) => adapter.start(this.router)));
      // The first requests are on their way: warm up while their answers travel.
      await Promise.all([connecting, this.warm()]);
    } catch (error) {
      await this.stop();
      throw error;
    }
    this.router.recover();
    this.subagents.recover();
    this.outbox.start();
    for (const feature of this.features) this.contribute(await feature.start?.(this.context));
    this.started = true;
    // Background work that must not slow reaching ready (MCP servers): it begins a moment after ready.
    const timer = setTimeout(() => {
      for (const { afterReady } of this.contributions) {
        if (!afterReady) continue;
        Promise.resolve()
          .then(afterReady)
          .catch((error: unknown) => this.logger.error({ err: error }, "after-ready-task-failed"));
      }
    }, AFTER_READY_DELAY_MS);
    timer.unref();
    this.stopTasks.push(() => clearTimeout(timer));
    logger.info(
      {
        channels: [...this.adapters.keys()],
        model: this.model ? config.llm.model : null,
        tools: this.tools.enabledNames().length,
      },
      "magpie-ready",
    );
  }

  /** Takes a feature's contribution: its ports replace the defaults, its stop task joins the others. */
  private contribute(contribution: void | Contribution): void {
    if (!contribution) return;
    this.contributions.push(contribution);
    const { access, approvals, authority, spend, stop } = contribution;
    if (access) this.ports.access = access;
    if (approvals) this.ports.approvals = approvals;
    if (authority) this.ports.authority = authority;
    if (spend) this.ports.spend = spend;
    if (stop) this.stopTasks.push(stop);
  }

  /** The core, from ready values: the features' ports, hooks and handlers, and the live settings. */
  private buildCore(): void {
    const { config, live } = this;
    const collect = <T>(pick: (contribution: Contribution) => T[] | undefined): T[] =>
      this.contributions.flatMap((contribution) => pick(contribution) ?? []);
    this.router = new Router({
      store: this.store,
      logger: this.logger,
      clock: this.clock,
      commands: this.commands,
      agents: this.agents,
      model: this.model,
      tools: this.tools,
      outbox: this.outbox,
      events: this.events,
      adapters: this.adapters,
      access: this.ports.access,
      authority: this.ports.authority,
      hooks: collect((contribution) => contribution.hooks),
      buttonHandlers: collect((contribution) => contribution.buttonHandlers),
      interceptors: collect((contribution) => contribution.interceptors),
      spend: this.ports.spend,
      media: this.media,
      settings: liveMap(live, routerSettingsOf),
    });
    this.services.delegation = new Delegation({
      engine: this.router.engine,
      agents: this.agents,
      // Read at each delegation: a reload's depth applies to the next one.
      get maxDepth() {
        return live.current().agent.maxDelegationDepth;
      },
    });
    this.subagents = new Subagents({
      engine: this.router.engine,
      agents: this.agents,
      tasks: new TaskRepository(this.store.db),
      clock: this.clock,
      logger: this.logger,
      note: (note) => void this.router.note(note),
      notice: (target, text) => void this.router.send(target, { text }, "notice"),
      settings: {
        get maxSubagents() {
          return config.agent.maxSubagents;
        },
        get timeoutSecs() {
          return config.agent.subagentTimeoutSecs;
        },
        get maxIterations() {
          return config.agent.subagentMaxIterations;
        },
      },
    });
    this.services.subagents = this.subagents;
    this.stopTasks.push(() => this.subagents.shutdown());
  }

  /**
   * What the first reply would otherwise pay for (measured in `npm run bench -- startup`): the LLM client and its
   * SDK, every enabled tool's JSON Schema, and the features' warm-up tasks (memory's prepared statements).
   */
  private async warmFetch(): Promise<void> {
    const address = this.http.address;
    if (!address) return;
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    const local = host === "0.0.0.0" ? "127.0.0.1" : host === "[::]" ? "[::1]" : host;
    const response = await fetch(`http://${local}:${address.port}/healthz`);
    await response.arrayBuffer();
  }

  private async warm(): Promise<void> {
    const tasks: Array<() => void | Promise<void>> = [
      () => this.model?.warm?.(),
      () => void this.tools.specs(this.tools.enabledNames()),
      // The first UUID seeds a buffer of random bytes (a few ms); turns and outbox entries each take one.
      () => void randomUUID(),
      // The first time-zone formatters load ICU's zone data (~10 ms): the prompt's clock line, budget periods.
      () => void clockLine(this.config.timezone, new Date()),
      () => void wallTimeAt(Date.now(), this.config.timezone),
      // The first fetch builds undici's dispatcher and compiles its HTTP parser (~8 ms), which the first LLM
      // request would otherwise wait for: one request to our own health endpoint on loopback does it instead.
      () => this.warmFetch(),
      ...this.contributions.flatMap((contribution) => (contribution.warmUp ? [contribution.warmUp] : [])),
    ];
    for (const task of tasks) {
      try {
        await task();
      } catch (error) {
        this.logger.debug({ err: error }, "warm-up-failed");
      }
    }
  }

  get isReady(): boolean {
    return (
      this.started && [...this.adapters.values()].every((adapter) => adapter.status().state === "connected")
    );
  }

  /**
   * Applies a valid config live (one reload at a time): restart-only keys keep their running value and are
   * reported; the rest is copied into the running config object (so what reads `config.x` at use sees it), the
   * core takes over agents, routes and its settings, and each feature's `reload` hook what it built from its keys.
   */
  reload(next: MagpieConfig): Promise<ReloadResult> {
    const run = this.reloading.then(() => this.applyReload(next));
    this.reloading = run.catch(() => {});
    return run;
  }

  private async applyReload(next: MagpieConfig): Promise<ReloadResult> {
    const needsRestart = diffConfig(this.config, next).paths.filter(
      (keyPath) => isRestartOnly(keyPath) && keyPath !== "sourcePath",
    );
    const previous = this.live.current();
    const kept = deepFreeze(withRestartOnlyKept(previous, next));
    const change: ConfigChange = diffConfig(previous, kept);
    // Replaced, never edited: whoever reads `config` (or a `Live`) at use sees the new values from here on.
    this.live.set(kept);
    const failures: ReloadResult["failures"] = [];
    try {
      this.reloadCore(change);
    } catch (error) {
      failures.push({ part: "core", error: error instanceof Error ? error.message : String(error) });
    }
    for (const feature of this.features) {
      if (!feature.reload) continue;
      try {
        await feature.reload(this.context, change);
      } catch (error) {
        failures.push({ part: feature.name, error: error instanceof Error ? error.message : String(error) });
      }
    }
    // Channels added, removed or reconnected (src/app/channel-reload.ts); access-only changes were taken above.
    if (this.options.loadChannels !== false)
      failures.push(...(await reloadChannels(this.channelParts(), change)));
    const result: ReloadResult = { applied: change.paths, needsRestart, failures };
    // Key paths only: the values (tokens among them) never reach the log.
    this.logger.info(result, "config-reloaded");
    return result;
  }

  /** What the core built from config: the redactor's secrets, agents and routes (settings are read live). */
  private reloadCore(_change: ConfigChange): void {
    const { config } = this;
    // New secrets (a token added to the file or .env) are redacted from now on; old ones stay hidden.
    createRedactor(config, this.options.env ?? process.env, this.redactor);
    // Always: the directory must not keep the previous config's sections, changed or not.
    this.agents.replace(config.agents, config.routes, config.llm.model);
  }

  private channelParts(): ChannelReloadDeps {
    const { adapters, config, router: sink, logger, http, store, outbox } = this;
    return { adapters, config, sink, logger, http, store, outbox };
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

  private createContext(): AppContext {
    const messenger: Messenger = {
      // The outbox directly (as the router's `send`): usable while features set up, before the router exists.
      send: (target, message, origin = "message") => {
        const id = this.store.outbox.enqueue(target, message, { origin, at: this.clock.now() });
        this.outbox.wake();
        return id;
      },
      waitForDelivery: (outboxId, timeoutMs) => this.waitForDelivery(outboxId, timeoutMs),
    };
    return {
      config: this.config,
      logger: this.logger,
      clock: this.clock,
      events: this.events,
      store: this.store,
      redactor: this.redactor,
      commands: this.commands,
      tools: this.tools,
      services: this.services,
      http: this.http,
      httpApp: this.http.app,
      messenger,
      note: (note) => this.router.note(note),
      agent: {
        run: async (input) => {
          const agent = this.agents.get(input.agent ?? this.agents.defaultAgent);
          if (!agent) return { ok: false, text: `Unknown agent "${input.agent}".` };
          return this.router.runIsolated({ ...input, agent });
        },
      },
      model: this.model,
      agents: this.agents,
      channels: this.adapters,
      authority: () => this.ports.authority,
      spend: () => this.ports.spend,
    };
  }

  private waitForDelivery(outboxId: number, timeoutMs: number): Promise<"sent" | "failed" | "pending"> {
    const current = this.store.outbox.get(outboxId);
    if (!current) return Promise.resolve("failed");
    if (current.status !== "pending") return Promise.resolve(current.status);
    return new Promise((resolve) => {
      const finish = (status: "sent" | "failed" | "pending") => {
        clearTimeout(timer);
        this.outbox.off("delivery-succeeded", onSent);
        this.outbox.off("delivery-failed", onFailed);
        resolve(status);
      };
      const onSent = (item: { id: number }) => item.id === outboxId && finish("sent");
      const onFailed = (item: { id: number }) => item.id === outboxId && finish("failed");
      const timer = setTimeout(() => finish("pending"), timeoutMs);
      this.outbox.on("delivery-succeeded", onSent);
      this.outbox.on("delivery-failed", onFailed);
    });
  }
}

/** The router's settings from config (at start and at each reload). */
function routerSettingsOf(config: MagpieConfig): RouterSettings {
  return {
    maxIterations: config.agent.maxIterations,
    maxConcurrentTurns: config.agent.maxConcurrentTurns,
    historyTokens: config.agent.historyTokens,
    timezone: config.timezone,
    globalPrompt: config.agent.systemPrompt,
    llm: { baseUrl: config.llm.baseUrl, timeoutMs: config.llm.timeoutMs },
    streaming: config.agent.streaming,
    progressNoticeSecs: config.agent.progressNoticeSecs,
    resumeWithinSecs: config.agent.resumeWithinSecs,
    guestToolSet: config.security.guestToolSet,
    inboundLimit: { maxChars: config.agent.maxInboundChars, workspace: config.workspace },
    textToolCalls: config.llm.textToolCalls,
    vision: config.llm.vision,
  };
}

/** What a transcription is spent on: the turn it is for (or, outside one, a turn of its own). */
function mediaScope({ sessionKey, agent, budget }: MediaContext): SpendScope {
  return {
    origin: "user",
    sessionKey: budget?.sessionKey ?? sessionKey,
    historyKey: sessionKey,
    turnId: budget?.turnId ?? `media:${Date.now()}`,
    agent,
  };
}
