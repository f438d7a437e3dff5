import type { Logger } from "pino";
import type { Live } from "../config/live.js";
import type { ChatModel } from "../llm/types.js";
import type { Store } from "../store/index.js";
import type { OutboxOrigin } from "../store/outbox.js";
import type { AccessControl } from "./access.js";
import type { AgentDirectory, AgentProfile } from "./agents.js";
import { ChatTurns, type ChatTurnsOptions, type SessionNote } from "./chat-turns.js";
import type { Clock } from "./clock.js";
import type { CommandRegistry } from "./commands.js";
import { type EventPublisher, NO_EVENTS } from "./events.js";
import type { AgentHooks } from "./hooks.js";
import type { AuthorityPort, SenderIdentity, TurnOrigin } from "./identity.js";
import { Intake, type IntakeOptions, type MessageInterceptor } from "./intake.js";
import type { MediaPort } from "./media.js";
import type { OutboxWorker } from "./outbox-worker.js";
import { settleOutcome } from "./outcomes.js";
import { recoverInbox } from "./recovery.js";
import { SessionQueues } from "./session-queue.js";
import type { SpendPort } from "./spend.js";
import type { Approver, ToolRuntime } from "./tool-runtime.js";
import { TurnEngine, type TurnEngineOptions } from "./turn-engine.js";
import type { ProvenanceSeed } from "./turn-provenance.js";
import { TurnSlots } from "./turn-slots.js";
import type {
  AcceptResult,
  ButtonHandler,
  ButtonPress,
  ChannelAdapter,
  InboundMessage,
  InboundSender,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
  ScreenVerdict,
} from "./types.js";

/** The settings a reload can change in a running router (`agent.maxConcurrentTurns` is not among them). */
export type RouterSettings = RouterSettingsValues;

export interface RouterOptions {
  store: Store;
  logger: Logger;
  clock: Clock;
  commands: CommandRegistry;
  agents: AgentDirectory;
  model: ChatModel | null;
  tools: ToolRuntime;
  outbox: OutboxWorker;
  /** The app's publisher on the core event stream (default: publishes nothing). */
  events?: EventPublisher;
  /** The connected channel adapters (the app adds them once, before they start). */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  access: AccessControl;
  /** Who is an owner and who a guest (the access feature's, or the console-only default). */
  authority: AuthorityPort;
  hooks: readonly AgentHooks[];
  buttonHandlers: readonly ButtonHandler[];
  /** Claim messages before they queue (typed answers to pending questions). */
  interceptors?: readonly MessageInterceptor[];
  /** Budgets and the usage ledger (the usage feature's; null without). */
  spend?: SpendPort | null;
  /** Photos and voice notes for the model (null without a model). */
  media?: MediaPort | null;
  /** What a reload may change, read at each use (`agent.maxConcurrentTurns` is read once: restart-only). */
  settings: Live<RouterSettingsValues>;
}

/** The router's settings (from config, at start and at each reload). */
export interface RouterSettingsValues {
  maxIterations: number;
  maxConcurrentTurns: number;
  historyTokens: number;
  timezone: string;
  globalPrompt?: string;
  llm: { baseUrl?: string; timeoutMs: number };
  /** Stream drafts into channels that can edit messages. */
  streaming: boolean;
  /** `agent.progressNoticeSecs` (0 or unset: no progress notes). */
  progressNoticeSecs?: number;
  /** `agent.retryOutageForSecs` (0 or unset: a turn whose models are unreachable fails at once). */
  retryOutageForSecs?: number;
  /** `agent.resumeWithinSecs`: a cut-off turn this young resumes from its step journal (default 3600). */
  resumeWithinSecs?: number;
  /** `security.guestToolSet`: the most a guest's turn may use. */
  guestToolSet: string[];
  /** `llm.textToolCalls`. */
  textToolCalls?: boolean;
  /** `llm.vision`. */
  vision?: "auto" | boolean;
  /** `agent.maxInboundChars` and the workspace that keeps the rest of a longer text. */
  inboundLimit?: { maxChars: number; workspace: string };
}

/** A prompt run as an agent turn outside the chat queue (a scheduled prompt job). */
export interface IsolatedRunInput {
  prompt: string;
  /** Session used for history; a fresh one per call keeps runs independent. */
  sessionKey: string;
  /** Where tool calls such as `message` default to. */
  target: ReplyTarget;
  toolSet?: string | string[];
  /** An upper bound on the tools, whatever the sets say (the job creator's set). */
  toolLimit?: readonly string[];
  signal?: AbortSignal;
  depth?: number;
  /** What started the run (a job, a delegation …). */
  origin: TurnOrigin;
  /** Whose authority the run carries (a job's creator). */
  sender: SenderIdentity;
  /** Who answers its approval requests, where (a job's creator, in the chat the job was made from). */
  approver?: Approver;
  /** Untrusted content it starts with (a trigger's payload) and the job's `allowAfterUntrusted` (the rule of two). */
  untrusted?: ProvenanceSeed;
}

export interface IsolatedRunResult {
  ok: boolean;
  text: string;
}

/**
 * Wires the core together: intake (adapter → access → inbox → commands, buttons, answers) feeds per-session
 * queues, whose turns — like every other kind of turn — run through the one turn engine. Implements the
 * adapters' InboundSink.
 */
export class Router implements InboundSink {
  readonly queues: SessionQueues;
  readonly engine: TurnEngine;
  readonly slots: TurnSlots;
  readonly intake: Intake;
  readonly chats: ChatTurns;
  private readonly startedAt: number;
  private readonly events: EventPublisher;

  constructor(private readonly options: RouterOptions) {
    this.startedAt = options.clock.now();
    const settings = options.settings;
    const events = options.events ?? NO_EVENTS;
    this.events = events;
    // The parts below take their ports as functions; here those are fixed values (the app built them first).
    const hooks = () => options.hooks;
    const adapters = () => options.adapters;
    const access = () => options.access;
    const authority = () => options.authority;
    const spend = options.spend ?? null;
    const media = options.media ?? null;
    const interceptors = options.interceptors ?? [];
    this.slots = new TurnSlots(settings.current().maxConcurrentTurns);
    this.engine = new TurnEngine({
      store: options.store,
      logger: options.logger,
      clock: options.clock,
      model: options.model,
      tools: options.tools,
      hooks,
      slots: this.slots,
      events,
      spend: () => spend,
      settings: engineSettingsView(settings),
    });
    const chatOptions: ChatTurnsOptions = {
      store: options.store,
      logger: options.logger,
      clock: options.clock,
      engine: this.engine,
      events,
      agents: options.agents,
      outbox: options.outbox,
      adapters,
      authority,
      media: () => media,
      hooks,
      // Read at each turn: a reload's value applies to the next one.
      get streaming() {
        return settings.current().streaming;
      },
      get progressNoticeSecs() {
        return settings.current().progressNoticeSecs ?? 0;
      },
      get retryOutageForSecs() {
        return settings.current().retryOutageForSecs ?? 0;
      },
    };
    this.chats = new ChatTurns(chatOptions, () => this.queues);
    this.queues = new SessionQueues(
      (sessionKey, ids, signal) => this.chats.run(sessionKey, ids, signal),
      (error, sessionKey) => options.logger.error({ err: error, session: sessionKey }, "turn-crashed"),
    );
    const intakeOptions: IntakeOptions = {
      store: options.store,
      logger: options.logger,
      clock: options.clock,
      commands: options.commands,
      events,
      access,
      authority,
      buttonHandlers: () => options.buttonHandlers,
      interceptors: () => interceptors,
      enqueue: (sessionKey, inboxId) => this.queues.enqueue(sessionKey, inboxId),
      send: (target, message, origin, inboxId) => this.send(target, message, origin, inboxId),
      wakeOutbox: () => options.outbox.wake(),
      get inboundLimit() {
        return settings.current().inboundLimit;
      },
    };
    this.intake = new Intake(intakeOptions);
  }

  get uptimeMs(): number {
    return this.options.clock.now() - this.startedAt;
  }

  message(inbound: InboundMessage): Promise<AcceptResult> {
    return this.intake.message(inbound);
  }

  buttonPressed(press: ButtonPress): Promise<void> {
    return this.intake.buttonPressed(press);
  }

  screen(sender: InboundSender): ScreenVerdict {
    return this.intake.screen(sender);
  }

  /** Puts a message into the durable outbox and wakes delivery. */
  send(
    target: ReplyTarget,
    message: OutboundMessage,
    origin: OutboxOrigin = "message",
    inboxId?: number,
  ): number {
    const id = this.options.store.outbox.enqueue(target, message, {
      origin,
      inboxId,
      at: this.options.clock.now(),
    });
    this.options.outbox.wake();
    return id;
  }

  /** Puts a note into a session (a subagent's result, an event); it starts a follow-up turn there. */
  note(note: SessionNote): number {
    return this.chats.note(note);
  }

  /** Aborts a session's running (or parked) turn and drops what waits behind it (/stop). */
  stop(sessionKey: string): { aborted: boolean; dropped: number; parked: boolean } {
    const parked = this.chats.isParked(sessionKey);
    const dropped = this.queues.dropPending(sessionKey);
    if (dropped.length > 0) {
      this.options.store.inbox.setStatus(dropped, "done", this.options.clock.now());
      settleOutcome(this.options.store, this.events, dropped, "interrupted", "stopped");
    }
    return { aborted: this.queues.abort(sessionKey, "stop"), dropped: dropped.length, parked };
  }

  /** After a restart: unstarted messages are answered, cut-off turns reported once per session. */
  recover(): { resumed: number; interrupted: number; notices: number; continued: number } {
    const result = recoverInbox({
      store: this.options.store,
      logger: this.options.logger,
      clock: this.options.clock,
      events: this.events,
      resumeWithinMs: (this.options.settings.current().resumeWithinSecs ?? 3600) * 1000,
      liveSince: this.startedAt,
      enqueue: (sessionKey, inboxId) => this.queues.enqueue(sessionKey, inboxId),
    });
    this.options.outbox.wake();
    return result;
  }

  /** Runs one prompt as an agent turn of its own (scheduled prompts) through the turn engine. */
  async runIsolated(input: IsolatedRunInput & { agent: AgentProfile }): Promise<IsolatedRunResult> {
    const outcome = await this.engine.runDetached({
      origin: input.origin,
      sessionKey: input.sessionKey,
      agent: input.agent,
      sender: input.sender,
      target: input.target,
      text: input.prompt,
      channel: input.target.channel,
      isDirect: true,
      depth: input.depth ?? 0,
      // Nobody watches an isolated run: Warn verdicts are refused; approvals go to the approver, if any.
      canAsk: false,
      ...(input.approver ? { approver: input.approver } : {}),
      ...(input.toolSet !== undefined ? { toolSet: input.toolSet } : {}),
      ...(input.toolLimit ? { toolLimit: input.toolLimit } : {}),
      ...(input.untrusted ? { untrusted: input.untrusted } : {}),
      signal: input.signal ?? new AbortController().signal,
    });
    return { ok: outcome.status === "ok", text: outcome.reply };
  }
}

/** The engine's settings, each read from the live router settings at use (a reload applies to the next turn). */
function engineSettingsView(settings: Live<RouterSettings>): TurnEngineOptions["settings"] {
  return {
    get maxIterations() {
      return settings.current().maxIterations;
    },
    get historyTokens() {
      return settings.current().historyTokens;
    },
    get timezone() {
      return settings.current().timezone;
    },
    get globalPrompt() {
      return settings.current().globalPrompt;
    },
    get llm() {
      return settings.current().llm;
    },
    get guestToolSet() {
      return settings.current().guestToolSet;
    },
    get textToolCalls() {
      return settings.current().textToolCalls ?? false;
    },
    get vision() {
      return settings.current().vision ?? "auto";
    },
  };
}
