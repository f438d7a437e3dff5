import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Logger } from "pino";
import type { ConsoleChannel } from "../../channels/console.js";
import type { MagpieConfig } from "../config/schema.js";
import type { AccessControl } from "../core/access.js";
import { AgentDirectory } from "../core/agents.js";
import type { ApprovalGate } from "../core/approvals.js";
import type { Clock } from "../core/clock.js";
import type { EventPublisher } from "../core/events.js";
import type { AuthorityPort } from "../core/identity.js";
import type { MediaContext, MediaPort } from "../core/media.js";
import { OutboxWorker } from "../core/outbox-worker.js";
import type { Router } from "../core/router.js";
import type { SpendPort, SpendScope } from "../core/spend.js";
import type { ChannelAdapter } from "../core/types.js";
import { createChatModel } from "../llm/create-model.js";
import { llmProviders } from "../llm/provider.js";
import { createTranscriber } from "../llm/transcriber.js";
import type { ChatModel } from "../llm/types.js";
import { createLogger } from "../log/logger.js";
import { createRedactor, type Redactor } from "../log/redact.js";
import { MediaPreparer } from "../media/media-preparer.js";
import { createPhoneNotifier } from "../notify/phone.js";
import { Store } from "../store/index.js";
import { type Tool, ToolError } from "../tools/define-tool.js";
import { builtinTools } from "../tools/index.js";
import { ToolRegistry } from "../tools/registry.js";
import { SpillStore } from "../tools/spill.js";
import { SpendGuard } from "../usage/spend-guard.js";
import type { FeatureDeps, MagpieFeature } from "./feature.js";

/** The app's ports: built-in defaults, replaced by what the features contribute (in set-up order). */
export interface AppPorts {
  access: AccessControl;
  approvals: ApprovalGate;
  authority: AuthorityPort;
  spend: SpendPort | null;
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

/** @internal the options the shared parts read. */
export interface BaseOptions {
  logger?: Logger;
  /** A chat model to use instead of the configured OpenAI-compatible one (tests, benchmarks). */
  model?: ChatModel | null;
  extraTools?: Tool[];
  env?: NodeJS.ProcessEnv;
}

/** What the app builds before any feature is set up: the parts every feature and the core share. */
export interface BaseParts {
  redactor: Redactor;
  logger: Logger;
  store: Store;
  model: ChatModel | null;
  media: MediaPort | null;
  services: FeatureDeps["services"];
  tools: ToolRegistry;
  agents: AgentDirectory;
  outbox: OutboxWorker;
}

/** Builds the store, the model, media, tools, the agent directory and the outbox worker from the config. */
export function buildBase(
  config: MagpieConfig,
  options: BaseOptions,
  parts: { ports: AppPorts; clock: Clock; events: EventPublisher; adapters: Map<string, ChannelAdapter> },
): BaseParts {
  const { ports, clock, events } = parts;
  const redactor = createRedactor(config, options.env ?? process.env);
  const logger = options.logger ?? createLogger({ redactor });
  const store = Store.open(config.dataDir);
  // File and shell tools (and shell cron jobs) work inside the workspace: it exists from the first start.
  mkdirSync(config.workspace, { recursive: true });
  // The phone notifier (Pushover, ntfy) is built once: the scheduler, budgets, alerts and triggers share it.
  const notifier = createPhoneNotifier(config.notify);
  // The usage ledger (and the budgets the usage feature puts in front of calls): every LLM call writes to it.
  const usage = new SpendGuard({
    db: store.db,
    settings: config,
    logger: logger.child({ component: "usage" }),
    clock,
    ...(notifier.configured ? { alert: (alert) => notifier.send({ ...alert, priority: 1 }) } : {}),
  });
  // One provider per endpoint for chat, embeddings, transcription and speech, handed the ledger and the event
  // stream here: it is the one place an LLM call is written down and published.
  const llm = llmProviders(config, redactor, { events, ledger: usage, logger });
  const chain =
    options.model !== undefined
      ? options.model
      : createChatModel(config, { logger, now: () => clock.now(), providers: llm });
  const model = chain ? llm.chat(chain) : null;
  const transcriber = createTranscriber(config, llm);
  // Photos and voice notes for the model: only when there is a model to take them.
  const media = model
    ? new MediaPreparer({
        vision: config.llm.vision,
        // A transcription is a call of the turn it is for: under that turn's budgets, in its ledger line.
        transcribe: transcriber
          ? (audio, fileName, mime, context) => transcriber(audio, fileName, mime, mediaScope(context))
          : null,
        logger,
        beforeCall: (context) => ports.spend?.beforeCall(mediaScope(context)) ?? { allowed: true },
      })
    : null;
  const spill = new SpillStore(path.join(config.dataDir, "spill"), config.tools.spillThresholdChars);
  const services: BaseParts["services"] = { store, redactor, spill, notifier, usage };
  const tools = new ToolRegistry({
    config,
    logger,
    services,
    events,
    approvals: {
      request: (request) => ports.approvals.request(request),
      ask: (request) =>
        ports.approvals.ask
          ? ports.approvals.ask(request)
          : Promise.reject(
              new ToolError("question.unavailable", "Questions are not available in this Magpie."),
            ),
    },
    spill,
  });
  tools.register(...builtinTools, ...(options.extraTools ?? []));
  const agents = new AgentDirectory(config.agents, config.routes, config.llm.model);
  const outbox = new OutboxWorker({
    outbox: store.outbox,
    adapters: parts.adapters,
    logger,
    clock,
    events,
    inbox: store.inbox,
  });
  return { redactor, logger, store, model, media, services, tools, agents, outbox };
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

/** What every feature is handed besides the config: the shared parts, the messenger and the agent core. */
export function featureDeps(
  base: BaseParts,
  parts: {
    clock: Clock;
    events: EventPublisher;
    adapters: ReadonlyMap<string, ChannelAdapter>;
    ports: AppPorts;
    /** The router, built after the features are set up (notes and isolated runs are used only later). */
    router: () => Router;
  },
): FeatureDeps {
  const { logger, store, tools, services, outbox, agents, model } = base;
  const { clock, events, adapters, ports, router } = parts;
  return {
    logger,
    clock,
    events,
    store,
    tools,
    services,
    channels: adapters,
    messenger: {
      // The outbox directly (as the router's `send`): usable while features set up, before the router exists.
      send: (target, message, origin = "message") => {
        const id = store.outbox.enqueue(target, message, { origin, at: clock.now() });
        outbox.wake();
        return id;
      },
      waitForDelivery: (outboxId, timeoutMs) => outbox.waitForDelivery(outboxId, timeoutMs),
      note: (note) => router().note(note),
    },
    agent: {
      directory: agents,
      model,
      run: async (input) => {
        const agent = agents.get(input.agent ?? agents.defaultAgent);
        if (!agent) return { ok: false, text: `Unknown agent "${input.agent}".` };
        return router().runIsolated({ ...input, agent });
      },
    },
    ports: { authority: () => ports.authority, spend: () => ports.spend },
  };
}
