import type { Logger } from "pino";
import type { ConfigChange } from "../config/config-change.js";
import type { MagpieConfig } from "../config/schema.js";
import type { AccessControl } from "../core/access.js";
import type { AgentRunner } from "../core/agent-runner.js";
import type { AgentDirectory } from "../core/agents.js";
import type { ApprovalGate } from "../core/approvals.js";
import type { SessionNote } from "../core/chat-turns.js";
import type { Clock } from "../core/clock.js";
import type { CommandRegistry } from "../core/commands.js";
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
import type { Redactor } from "../log/redact.js";
import type { Store } from "../store/index.js";
import type { ToolServices } from "../tools/context.js";
import type { ToolRegistry } from "../tools/registry.js";

// The ports live beside their users; re-exported for modules that still import them from here.
export type { AgentRunner, ButtonHandler, HttpHandler, HttpRoutes, Messenger };

/** What a feature sees while it sets itself up. */
export interface AppContext {
  config: MagpieConfig;
  logger: Logger;
  /** The app's time source: features hand it to everything they build that reads the time. */
  clock: Clock;
  /**
   * The app's publisher on the core event stream: features subscribe with `magpieEvents.X.subscribe(events.app,
   * …)` and see only this app's events (STYLE.md → Observe through events).
   */
  events: EventPublisher;
  store: Store;
  redactor: Redactor;
  commands: CommandRegistry;
  tools: ToolRegistry;
  /** Services handed to tools (`context.services`); features add theirs by name. */
  services: ToolServices;
  http: HttpRoutes;
  /** The Hono app behind `http`, for features that serve pages (the dashboard). */
  httpApp: HttpApp;
  messenger: Messenger;
  /** Puts a note into a session (an event); it starts a follow-up turn there. Returns the inbox id. */
  note(note: SessionNote): number;
  agent: AgentRunner;
  /** Null when no LLM is configured (no-LLM mode). */
  model: ChatModel | null;
  /** The named agents and routes (the app's one directory: a config reload updates it). */
  agents: AgentDirectory;
  /** Channel adapters by name, filled before features start. */
  channels: ReadonlyMap<string, ChannelAdapter>;
  addHooks(hooks: AgentHooks): void;
  addButtonHandler(handler: ButtonHandler): void;
  /** Claims messages before they queue for a turn (typed answers to pending questions). */
  addMessageInterceptor(interceptor: MessageInterceptor): void;
  setAccessControl(access: AccessControl): void;
  setApprovalGate(gate: ApprovalGate): void;
  /** Installs who-is-owner (the access feature); features read it through `authority()`. */
  setAuthority(authority: AuthorityPort): void;
  authority(): AuthorityPort;
  /** Installs the budget check and usage ledger asked around every LLM call (the usage feature). */
  setSpendPort(spend: SpendPort): void;
  /** The budget check and usage ledger, once the usage feature installed it (null without). */
  spend(): SpendPort | null;
  /** Adds a channel adapter a feature owns (the dashboard's web chat); started with the others. */
  addChannel(adapter: ChannelAdapter): void;
  /** Runs `task` when the app stops (reverse order of registration). */
  onStop(task: () => void | Promise<void>): void;
  /** Runs `listener` when a chat's session ends (`/reset`): per-session resources are released. */
  onSessionReset(listener: (sessionKey: string) => void | Promise<void>): void;
  /** Runs `task` in the background shortly after the app is ready (work that must not delay ready). */
  afterReady(task: () => void | Promise<void>): void;
  /**
   * Runs `task` while the channels connect (overlapping their network waits): what the first reply would
   * otherwise load or prepare. A failure is logged and costs nothing else.
   */
  warmUp(task: () => void | Promise<void>): void;
}

/** A feature plugs tools, commands, services and background work into the app. */
export interface MagpieFeature {
  name: string;
  setup(app: AppContext): void | Promise<void>;
  /** Called after channels are connected (start schedulers and other background work here). */
  start?(app: AppContext): void | Promise<void>;
  /**
   * A valid new config is being applied live (`magpie reload`, SIGHUP, the file changed): take over what changed
   * under this feature's keys. `app.config` already holds the new values. Throwing marks the reload as partly
   * failed (logged and reported), it never stops the bot.
   */
  reload?(app: AppContext, change: ConfigChange): void | Promise<void>;
}
