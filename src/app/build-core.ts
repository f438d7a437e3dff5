import type { Logger } from "pino";
import type { LiveSource } from "../config/live.js";
import { liveMap } from "../config/live.js";
import type { MagpieConfig } from "../config/schema.js";
import { builtinCommands } from "../core/builtin-commands.js";
import type { Clock } from "../core/clock.js";
import type { CommandRegistry } from "../core/commands.js";
import { Delegation } from "../core/delegation.js";
import type { EventPublisher } from "../core/events.js";
import { modelCommand } from "../core/model-command.js";
import { Router, type RouterSettings } from "../core/router.js";
import { Subagents } from "../core/subagents.js";
import type { ChannelAdapter } from "../core/types.js";
import type { SandboxStatus } from "../security/sandbox.js";
import { TaskRepository } from "../store/tasks.js";
import type { AppPorts, BaseParts } from "./base-parts.js";
import type { Contribution } from "./feature.js";

export interface CoreParts {
  base: BaseParts;
  live: LiveSource<MagpieConfig>;
  ports: AppPorts;
  clock: Clock;
  events: EventPublisher;
  commands: CommandRegistry;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  contributions: readonly Contribution[];
  /** The sandbox probe's result, once start-up has it (/status). */
  sandbox(): SandboxStatus | null;
  logger: Logger;
}

/**
 * The core, from ready values: the features' ports, hooks and handlers, and the live settings. The built-in
 * commands come first, then /model, then the features' commands in set-up order (the order /help lists them).
 */
export function buildCore(parts: CoreParts): { router: Router; subagents: Subagents } {
  const { base, live, ports, clock, events, commands, adapters, contributions, logger } = parts;
  const config = live.current();
  const collect = <T>(pick: (contribution: Contribution) => T[] | undefined): T[] =>
    contributions.flatMap((contribution) => pick(contribution) ?? []);
  const router = new Router({
    store: base.store,
    logger,
    clock,
    commands,
    agents: base.agents,
    model: base.model,
    tools: base.tools,
    outbox: base.outbox,
    events,
    adapters,
    access: ports.access,
    authority: ports.authority,
    hooks: collect((contribution) => contribution.hooks),
    buttonHandlers: collect((contribution) => contribution.buttonHandlers),
    interceptors: collect((contribution) => contribution.interceptors),
    spend: ports.spend,
    media: base.media,
    settings: liveMap(live, routerSettingsOf),
  });
  base.services.delegation = new Delegation({
    engine: router.engine,
    agents: base.agents,
    // Read at each delegation: a reload's depth applies to the next one.
    get maxDepth() {
      return live.current().agent.maxDelegationDepth;
    },
  });
  const subagents = new Subagents({
    engine: router.engine,
    agents: base.agents,
    tasks: new TaskRepository(base.store.db),
    clock,
    logger,
    note: (note) => void router.note(note),
    notice: (target, text) => void router.send(target, { text }, "notice"),
    settings: {
      get maxSubagents() {
        return live.current().agent.maxSubagents;
      },
      get timeoutSecs() {
        return live.current().agent.subagentTimeoutSecs;
      },
      get maxIterations() {
        return live.current().agent.subagentMaxIterations;
      },
    },
  });
  base.services.subagents = subagents;
  commands.register(
    ...builtinCommands({
      commands,
      store: base.store,
      agents: base.agents,
      adapters: () => adapters,
      modelName: base.model ? config.llm.model : null,
      uptimeMs: () => router.uptimeMs,
      queueStats: () => ({
        running: router.slots.running,
        paused: router.slots.pausedCount,
        waiting: router.queues.stats().waiting,
      }),
      stop: (sessionKey) => router.stop(sessionKey),
      onReset: (sessionKey) => {
        base.tools.scratch.clear(sessionKey);
        for (const { onSessionReset } of contributions) {
          if (!onSessionReset) continue;
          Promise.resolve()
            .then(() => onSessionReset(sessionKey))
            .catch((error: unknown) => logger.warn({ err: error }, "session-reset-listener-failed"));
        }
      },
      sandbox: parts.sandbox,
      tasks: {
        cancel: (sessionKey, id) => subagents.cancel(sessionKey, id),
        cancelSession: (sessionKey) => subagents.cancelSession(sessionKey),
        list: (sessionKey) => subagents.list(sessionKey),
      },
      clock,
    }),
    modelCommand({
      kv: base.store.kv,
      agents: base.agents,
      primary: base.model ? config.llm.model : null,
      fallbacks: config.llm.fallbacks.map((entry) => entry.model),
    }),
    ...collect((contribution) => contribution.commands),
  );
  return { router, subagents };
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
    retryOutageForSecs: config.agent.retryOutageForSecs,
    resumeWithinSecs: config.agent.resumeWithinSecs,
    guestToolSet: config.security.guestToolSet,
    inboundLimit: { maxChars: config.agent.maxInboundChars, workspace: config.workspace },
    textToolCalls: config.llm.textToolCalls,
    vision: config.llm.vision,
  };
}
