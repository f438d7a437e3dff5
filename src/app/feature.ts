import type { Logger } from "pino";
import type { ConfigChange } from "../config/config-change.js";
import type { MagpieConfig } from "../config/schema.js";
import type { AccessControl } from "../core/access.js";
import type { AgentRunner } from "../core/agent-runner.js";
import type { AgentDirectory } from "../core/agents.js";
import type { ApprovalGate } from "../core/approvals.js";
import type { SessionNote } from "../core/chat-turns.js";
import type { Clock } from "../core/clock.js";
import type { SlashCommand } from "../core/commands.js";
import type { EventPublisher } from "../core/events.js";
import type { AgentHooks } from "../core/hooks.js";
import type { AuthorityPort } from "../core/identity.js";
import type { MessageInterceptor } from "../core/intake.js";
import type { Messenger } from "../core/messenger.js";
import type { SpendPort } from "../core/spend.js";
import type { ButtonHandler, ChannelAdapter } from "../core/types.js";
import type { HttpHandler, HttpRoutes } from "../http/routes.js";
import type { HttpApp } from "../http/server.js";
import type { ChatModel } from "../llm/types.js";
import type { Notifier } from "../notify/pushover.js";
import type { Store } from "../store/index.js";
import type { ToolServices } from "../tools/context.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { SpendGuard } from "../usage/spend-guard.js";

// The ports live beside their users; re-exported for modules that still import them from here.
export type { AgentRunner, ButtonHandler, HttpHandler, HttpRoutes, Messenger };

/** The ports other features provide, read at use (a feature `uses` them, so their provider is set up first). */
export interface ProvidedPorts {
  /** Who is an owner: the access feature's (console-only until it is set up). */
  authority(): AuthorityPort;
  /** The budget check and usage ledger: the usage feature's (null without it). */
  spend(): SpendPort | null;
}

/** The agent core as features reach it: isolated turns, the agent directory and the chat model. */
export interface AgentAccess extends AgentRunner {
  /** The named agents and routes (the app's one directory: a config reload updates it). */
  directory: AgentDirectory;
  /** Null when no LLM is configured (no-LLM mode). */
  model: ChatModel | null;
}

/** The outbox and session notes, usable while features set up (before the router exists). */
export interface AppMessenger extends Messenger {
  /** Puts a note into a session (an event); it starts a follow-up turn there. Returns the inbox id. */
  note(note: SessionNote): number;
}

/**
 * What a feature is handed besides the config (`setup(config, deps)`): the app's shared parts. What a feature adds
 * (commands, routes, ports, hooks) it returns in its contribution; nothing here is written by a feature except the
 * `services` bag handed to tools.
 */
export interface FeatureDeps {
  logger: Logger;
  /** The app's time source: features hand it to everything they build that reads the time. */
  clock: Clock;
  /**
   * The app's publisher on the core event stream: features subscribe with `magpieEvents.X.subscribe(events.app,
   * …)` and see only this app's events (STYLE.md → Observe through events).
   */
  events: EventPublisher;
  store: Store;
  /** The tool registry (MCP adds and removes its servers' tools as they come and go). */
  tools: ToolRegistry;
  /** Services handed to tools (`context.services`); features add theirs by name. The notifier is the app's own. */
  services: ToolServices & {
    notifier: Notifier;
    /** The usage ledger every LLM call is written to (the LLM provider's); the usage feature puts its budgets first. */
    usage: SpendGuard;
    /** Delivery failover (its feature): the path that delivered a failed outbox item, if one did. */
    deliveryFailover?: (outboxId: number) => Promise<string | null | undefined>;
  };
  messenger: AppMessenger;
  agent: AgentAccess;
  /** Channel adapters by name, filled before features start. */
  channels: ReadonlyMap<string, ChannelAdapter>;
  ports: ProvidedPorts;
}

/** @deprecated name kept for modules that still import it: the deps a feature is handed. */
export type AppContext = FeatureDeps;

/** A node-style HTTP route a feature serves (webhooks). */
export interface RouteSpec {
  method: "GET" | "POST";
  path: string;
  handler: HttpHandler;
}

/**
 * What the app's own parts provide (notifier, access, authority, approvals: always, with a default) and what a
 * feature may provide for others. A feature names those it `needs` (start-up stops without a provider) and those it
 * `uses` when present; it is set up after their providers, whatever the list order.
 */
export type PortName =
  | "notifier"
  | "access"
  | "authority"
  | "approvals"
  | "spend"
  | "memory"
  | "scheduler"
  | "hardware"
  | "skills"
  | "triggers";

/** What a feature's `setup` (or `start`) adds to the app: ports, hooks, channels and lifecycle work. */
export interface Contribution {
  /** Who may talk to the bot (replaces the console-only default). */
  access?: AccessControl;
  /** Who is an owner (replaces the console-only default). */
  authority?: AuthorityPort;
  /** Approvals and questions in chat (replaces deny-all). */
  approvals?: ApprovalGate;
  /** Budgets and the usage ledger around every LLM call. */
  spend?: SpendPort;
  hooks?: AgentHooks[];
  buttonHandlers?: ButtonHandler[];
  /** Claims messages before they queue for a turn (typed answers to pending questions). */
  interceptors?: MessageInterceptor[];
  /** Channel adapters the feature owns (the dashboard's web chat); started with the others. */
  channels?: ChannelAdapter[];
  /** Chat commands the feature adds (registered before the core is built). */
  commands?: SlashCommand[];
  /** Node-style HTTP routes (webhooks) on the one server. */
  routes?: RouteSpec[];
  /** A Hono sub-app (pages, /metrics) mounted at the server's root: built alone, then mounted (`app.route`). */
  pages?: HttpApp;
  /** Runs when the app stops (reverse order of contribution). */
  stop?(): void | Promise<void>;
  /** Runs in the background shortly after the app is ready (work that must not delay ready). */
  afterReady?(): void | Promise<void>;
  /** Runs while the channels connect: what the first reply would otherwise load. A failure is logged only. */
  warmUp?(): void | Promise<void>;
  /** Runs when a chat's session ends (`/reset`): per-session resources are released. */
  onSessionReset?(sessionKey: string): void | Promise<void>;
}

/** A feature plugs tools, commands, services and background work into the app (see `defineFeature`). */
export interface MagpieFeature {
  name: string;
  /** Ports the feature can't work without: start-up stops when no enabled feature provides one. */
  needs?: PortName[];
  /** Ports the feature takes when present (set up after their providers). */
  uses?: PortName[];
  /** Ports the feature's contribution (or `services`) provides. */
  provides?: PortName[];
  setup(config: MagpieConfig, deps: FeatureDeps): void | Contribution | Promise<void | Contribution>;
  /** Called after channels are connected (start schedulers and other background work here). */
  start?(config: MagpieConfig, deps: FeatureDeps): void | Contribution | Promise<void | Contribution>;
  /**
   * A valid new config is being applied live (`magpie reload`, SIGHUP, the file changed): take over what changed
   * under this feature's keys. `config` reads the new values (it is the live config's view); `change` holds both.
   * Throwing marks the reload as partly failed (logged and reported), it never stops the bot.
   */
  reload?(config: MagpieConfig, deps: FeatureDeps, change: ConfigChange): void | Promise<void>;
}

/** Declares a feature (a typed identity: the shape is checked where it is written). */
export function defineFeature(feature: MagpieFeature): MagpieFeature {
  return feature;
}
