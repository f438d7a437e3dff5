import type { Logger } from "pino";
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
export type RouterSettings = RouterOptions["settings"];

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
  adapters: () => ReadonlyMap<string, ChannelAdapter>;
  access: () => AccessControl;
  /** Who is an owner and who a guest (installed by the access feature). */
  authority: () => AuthorityPort;
  hooks: () => readonly AgentHooks[];
  buttonHandlers: () => readonly ButtonHandler[];
  /** Claim messages before they queue (typed answers to pending questions). */
  interceptors?: () => readonly MessageInterceptor[];
  /** Budgets and the usage ledger (installed by the usage feature). */
  spend?: () => SpendPort | null;
  /** Photos and voice notes for the model (installed by the media feature). */
  media?: () => MediaPort | null;
  settings: {
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
    /** `security.guestToolSet`: the most a guest's turn may use. */
    guestToolSet: string[];
    /** `llm.textToolCalls`. */
    textToolCalls?: boolean;
    /** `llm.vision`. */
    vision?: "auto" | boolean;
    /** `agent.maxInboundChars` and the workspace that keeps the rest of a longer text. */
    inboundLimit?: { maxChars: number; workspace: string };
  };
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
  /** The settings objects handed to the engine, chat turns and intake: a reload updates them in place. */
  private readonly engineSettings: TurnEngineOptions["settings"];
  private readonly chatOptions: ChatTurnsOptions;
  private readonly intakeOptions: IntakeOptions;

  constructor(private readonly options: RouterOptions) {
    this.startedAt = options.clock.now();
    const { settings } = options;
    const events = options.events ?? NO_EVENTS;
    this.events = events;
    this.slots = new TurnSlots(settings.maxConcurrentTurns);
    this.engineSettings = engineSettingsOf(settings);
    this.engine = new TurnEngine({
      store: options.store,
      logger: options.logger,
      clock: options.clock,
      model: options.model,
      tools: options.tools,
      hooks: options.hooks,
      slots: this.slots,
      events,
      spend: options.spend ?? (() => null),
      settings: this.engineSettings,
    });
    this.chatOptions = {
      store: options.store,
      logger: options.logger,
      clock: options.clock,
      engine: this.engine,
      events,
      agents: options.agents,
      outbox: options.outbox,
      adapters: options.adapters,
      authority: options.authority,
      media: options.media ?? (() => null),
      hooks: options.hooks,
      streaming: settings.streaming,
      progressNoticeSecs: settings.progressNoticeSecs ?? 0,
    };
    this.chats = new ChatTurns(this.chatOptions, () => this.queues);
    this.queues = new SessionQueues(
      (sessionKey, ids, signal) => this.chats.run(sessionKey, ids, signal),
      (error, sessionKey) => options.logger.error({ err: error, session: sessionKey }, "turn-crashed"),
    );
    this.intakeOptions = {
      store: options.store,
      logger: options.logger,
      clock: options.clock,
      commands: options.commands,
      events,
      access: options.access,
      authority: options.authority,
      buttonHandlers: options.buttonHandlers,
      interceptors: options.interceptors ?? (() => []),
      enqueue: (sessionKey, inboxId) => this.queues.enqueue(sessionKey, inboxId),
      send: (target, message, origin, inboxId) => this.send(target, message, origin, inboxId),
      wakeOutbox: () => options.outbox.wake(),
      ...(settings.inboundLimit ? { inboundLimit: settings.inboundLimit } : {}),
    };
    this.intake = new Intake(this.intakeOptions);
  }

  /**
   * Takes over changed settings (a config reload): the next turn, LLM round and message use them; a turn already
   * running keeps the prompt it was given. `maxConcurrentTurns` is not changed here (a restart-only key).
   */
  updateSettings(settings: RouterSettings): void {
    Object.assign(this.engineSettings, engineSettingsOf(settings));
    this.chatOptions.streaming = settings.streaming;
    this.chatOptions.progressNoticeSecs = settings.progressNoticeSecs ?? 0;
    if (settings.inboundLimit) this.intakeOptions.inboundLimit = settings.inboundLimit;
    else delete this.intakeOptions.inboundLimit;
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

  /** Aborts a session's running turn and drops what waits behind it (/stop). */
  stop(sessionKey: string): { aborted: boolean; dropped: number } {
    const dropped = this.queues.dropPending(sessionKey);
    if (dropped.length > 0) {
      this.options.store.inbox.setStatus(dropped, "done", this.options.clock.now());
      settleOutcome(this.options.store, this.events, dropped, "interrupted", "stopped");
    }
    return { aborted: this.queues.abort(sessionKey, "stop"), dropped: dropped.length };
  }

  /** After a restart: unstarted messages are answered, cut-off turns reported once per session. */
  recover(): { resumed: number; interrupted: number; notices: number } {
    const result = recoverInbox({
      store: this.options.store,
      logger: this.options.logger,
      clock: this.options.clock,
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
      signal: input.signal ?? new AbortController().signal,
    });
    return { ok: outcome.status === "ok", text: outcome.reply };
  }
}

function engineSettingsOf(settings: RouterSettings): TurnEngineOptions["settings"] {
  return {
    maxIterations: settings.maxIterations,
    historyTokens: settings.historyTokens,
    timezone: settings.timezone,
    globalPrompt: settings.globalPrompt,
    llm: settings.llm,
    guestToolSet: settings.guestToolSet,
    textToolCalls: settings.textToolCalls ?? false,
    vision: settings.vision ?? "auto",
  };
}
