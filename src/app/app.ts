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
import type { MagpieConfig } from "../config/schema.js";
import type { AccessControl } from "../core/access.js";
import { AgentDirectory } from "../core/agents.js";
import type { ApprovalGate } from "../core/approvals.js";
import { denyAllApprovals } from "../core/approvals.js";
import { builtinCommands } from "../core/builtin-commands.js";
import { type Clock, systemClock } from "../core/clock.js";
import { CommandRegistry } from "../core/commands.js";
import { Delegation, type DelegationOptions } from "../core/delegation.js";
import { type EventPublisher, eventPublisher } from "../core/events.js";
import type { AgentHooks } from "../core/hooks.js";
import type { AuthorityPort } from "../core/identity.js";
import type { MessageInterceptor } from "../core/intake.js";
import type { MediaContext, MediaPort } from "../core/media.js";
import type { Messenger } from "../core/messenger.js";
import { modelCommand } from "../core/model-command.js";
import { OutboxWorker } from "../core/outbox-worker.js";
import { Router, type RouterSettings } from "../core/router.js";
import type { SpendPort, SpendScope } from "../core/spend.js";
import { Subagents, type SubagentsOptions } from "../core/subagents.js";
import { clockLine } from "../core/system-prompt.js";
import type { ButtonHandler, ChannelAdapter } from "../core/types.js";
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
import { requireSandboxStatus, type SandboxStatus } from "../security/sandbox.js";
import { HostAllowList } from "../security/ssrf-address.js";
import { Store } from "../store/index.js";
import { TaskRepository } from "../store/tasks.js";
import { type Tool, ToolError } from "../tools/define-tool.js";
import { builtinTools } from "../tools/index.js";
import { ToolRegistry } from "../tools/registry.js";
import { SpillStore } from "../tools/spill.js";
import { type ChannelReloadDeps, reloadChannels } from "./channel-reload.js";
import type { AppContext, MagpieFeature } from "./feature.js";
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
  readonly router: Router;
  readonly subagents: Subagents;
  readonly http: HttpServer;
  /** Whether the event loop keeps turning (`/healthz`). */
  readonly loop: EventLoopMonitor;
  readonly adapters = new Map<string, ChannelAdapter>();
  readonly context: AppContext;
  /** This app's publisher on the core event stream (a random app id: two apps in one process never mix). */
  readonly events: EventPublisher;
  private readonly services: AppContext["services"];

  private readonly hooks: AgentHooks[] = [];
  private readonly buttonHandlers: ButtonHandler[] = [];
  private readonly interceptors: MessageInterceptor[] = [];
  private readonly stopTasks: Array<() => void | Promise<void>> = [];
  private readonly readyTasks: Array<() => void | Promise<void>> = [];
  private readonly warmTasks: Array<() => void | Promise<void>> = [];
  private readonly resetListeners: Array<(sessionKey: string) => void | Promise<void>> = [];
  private readonly featureChannels: ChannelAdapter[] = [];
  private access: AccessControl = consoleOnlyAccess;
  private approvals: ApprovalGate = denyAllApprovals;
  private authority: AuthorityPort = consoleOnlyAuthority;
  private spend: SpendPort | null = null;
  private readonly media: MediaPort | null;
  private started = false;
  private sandbox: SandboxStatus | null = null;
  private stopping: Promise<void> | null = null;
  private reloading: Promise<unknown> = Promise.resolve();
  /** Settings objects the core parts read at use: a reload updates them in place. */
  private readonly delegationOptions: DelegationOptions;
  private readonly subagentSettings: SubagentsOptions["settings"];

  constructor(private readonly options: AppOptions) {
    const config = options.config;
    this.config = config;
    this.clock = options.clock ?? systemClock;
    this.events = eventPublisher(randomUUID(), () => this.clock.now());
    if (options.access) this.access = options.access;
    if (options.authority) this.authority = options.authority;
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
          beforeCall: (context) => this.spend?.beforeCall(mediaScope(context)) ?? { allowed: true },
          onUsage: (usage, context) => this.spend?.record(mediaScope(context), usage),
        })
      : null;

    const spill = new SpillStore(path.join(config.dataDir, "spill"), config.tools.spillThresholdChars);
    const services: AppContext["services"] = { store: this.store, redactor: this.redactor, spill };
    this.services = services;
    this.tools = new ToolRegistry({
      config,
      logger: this.logger,
      services,
      events: this.events,
      approvals: {
        request: (request) => this.approvals.request(request),
        ask: (request) =>
          this.approvals.ask
            ? this.approvals.ask(request)
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
      adapters: () => this.adapters,
      logger: this.logger,
      clock: this.clock,
      events: this.events,
      inbox: this.store.inbox,
    });
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
      adapters: () => this.adapters,
      access: () => this.access,
      authority: () => this.authority,

      hooks: () => this.hooks,
      buttonHandlers: () => this.buttonHandlers,
      interceptors: () => this.interceptors,
      spend: () => this.spend,
      media: () => this.media,
      settings: routerSettingsOf(config),
    });
    this.delegationOptions = {
      engine: this.router.engine,
      agents: this.agents,
      maxDepth: config.agent.maxDelegationDepth,
    };
    services.delegation = new Delegation(this.delegationOptions);
    this.subagentSettings = subagentSettingsOf(config);
    this.subagents = new Subagents({
      engine: this.router.engine,
      agents: this.agents,
      tasks: new TaskRepository(this.store.db),
      clock: this.clock,
      logger: this.logger,
      note: (note) => void this.router.note(note),
      notice: (target, text) => void this.router.send(target, { text }, "notice"),
      settings: this.subagentSettings,
    });
    services.subagents = this.subagents;
    this.stopTasks.push(() => this.subagents.shutdown());
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
          for (const listener of this.resetListeners) {
            Promise.resolve()
              .then(() => listener(sessionKey))
              .catch((error: unknown) => this.logger.warn({ err: error }, "session-reset-listener-failed"));
          }
        },
        sandbox: () => this.sandbox,
        tasks: this.subagents,
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
    for (const feature of this.options.features ?? defaultFeatures) await feature.setup(this.context);
    this.sandbox = await sandbox;
    if (this.sandbox.active) logger.info(this.sandbox, "sandbox");
    else logger.warn(this.sandbox, "sandbox");
    if (this.options.listen !== false) {
      this.loop.start();
      const address = await this.http.listen(config.http.port, config.http.host);
      logger.info({ host: address.address, port: address.port }, "http-listening");
    }
    const adapters: ChannelAdapter[] = [...(this.options.adapters ?? []), ...this.featureChannels];
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
    for (const feature of this.options.features ?? defaultFeatures) await feature.start?.(this.context);
    this.started = true;
    // Background work that must not slow reaching ready (MCP servers): it begins a moment after ready.
    const timer = setTimeout(() => {
      for (const task of this.readyTasks) {
        Promise.resolve()
          .then(task)
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
      ...this.warmTasks,
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
    const kept = withRestartOnlyKept(this.config, next);
    // The sections are replaced, never edited: a shallow copy keeps the previous config intact for the hooks.
    const change: ConfigChange = diffConfig({ ...this.config }, kept);
    const target = this.config as unknown as Record<string, unknown>;
    for (const key of Object.keys(target)) if (!(key in kept)) delete target[key];
    Object.assign(target, kept);
    const failures: ReloadResult["failures"] = [];
    try {
      this.reloadCore(change);
    } catch (error) {
      failures.push({ part: "core", error: error instanceof Error ? error.message : String(error) });
    }
    for (const feature of this.options.features ?? defaultFeatures) {
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

  /** What the core built from config: agents and routes, the router's, delegation's and subagents' settings. */
  private reloadCore(change: ConfigChange): void {
    const { config } = this;
    // New secrets (a token added to the file or .env) are redacted from now on; old ones stay hidden.
    createRedactor(config, this.options.env ?? process.env, this.redactor);
    if (change.touches("agents") || change.touches("routes"))
      this.agents.replace(config.agents, config.routes, config.llm.model);
    this.router.updateSettings(routerSettingsOf(config));
    this.delegationOptions.maxDepth = config.agent.maxDelegationDepth;
    Object.assign(this.subagentSettings, subagentSettingsOf(config));
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
    await this.router.queues.shutdown(graceMs);
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
      send: (target, message, origin) => this.router.send(target, message, origin),
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
      addHooks: (hooks) => void this.hooks.push(hooks),
      addButtonHandler: (handler) => void this.buttonHandlers.push(handler),
      addMessageInterceptor: (interceptor) => void this.interceptors.push(interceptor),
      setAccessControl: (access) => {
        this.access = access;
      },
      setApprovalGate: (gate) => {
        this.approvals = gate;
      },
      setAuthority: (authority) => {
        this.authority = authority;
      },
      setSpendPort: (spend) => {
        this.spend = spend;
      },
      spend: () => this.spend,
      authority: () => this.authority,
      addChannel: (adapter) => void this.featureChannels.push(adapter),
      onStop: (task) => void this.stopTasks.push(task),
      afterReady: (task) => void this.readyTasks.push(task),
      warmUp: (task) => void this.warmTasks.push(task),
      onSessionReset: (listener) => void this.resetListeners.push(listener),
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
    guestToolSet: config.security.guestToolSet,
    inboundLimit: { maxChars: config.agent.maxInboundChars, workspace: config.workspace },
    textToolCalls: config.llm.textToolCalls,
    vision: config.llm.vision,
  };
}

function subagentSettingsOf(config: MagpieConfig): SubagentsOptions["settings"] {
  return {
    maxSubagents: config.agent.maxSubagents,
    timeoutSecs: config.agent.subagentTimeoutSecs,
    maxIterations: config.agent.subagentMaxIterations,
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
