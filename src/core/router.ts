import type { Logger } from "pino";
import { estimateMessageTokens } from "../llm/tokens.js";
import type { ChatMessage, ChatModel } from "../llm/types.js";
import type { InboxItem } from "../store/inbox.js";
import type { Store } from "../store/index.js";
import type { OutboxOrigin } from "../store/outbox.js";
import type { AccessControl } from "./access.js";
import { runAgentTurn } from "./agent-loop.js";
import type { AgentDirectory, AgentProfile } from "./agents.js";
import type { Clock } from "./clock.js";
import { type CommandRegistry, parseCommand } from "./commands.js";
import { compactHistory, recentWithinBudget } from "./compaction.js";
import { errorMessage } from "./errors.js";
import type { AgentHooks } from "./hooks.js";
import type { AuthorityPort, Role, SenderIdentity, TurnOrigin } from "./identity.js";
import { INTERRUPTED_REPLY, NO_LLM_REPLY } from "./no-llm.js";
import type { OutboxWorker } from "./outbox-worker.js";
import { replyTargetOf, sessionKeyOf } from "./session-key.js";
import { SessionQueues } from "./session-queue.js";
import { StreamPreview } from "./stream-preview.js";
import { buildSystemPrompt } from "./system-prompt.js";
import type { ToolRuntime } from "./tool-runtime.js";
import type {
  AcceptResult,
  ButtonHandler,
  ButtonPress,
  ChannelAdapter,
  InboundMessage,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
} from "./types.js";

export interface RouterOptions {
  store: Store;
  logger: Logger;
  clock: Clock;
  commands: CommandRegistry;
  agents: AgentDirectory;
  model: ChatModel | null;
  tools: ToolRuntime;
  outbox: OutboxWorker;
  adapters: () => ReadonlyMap<string, ChannelAdapter>;
  access: () => AccessControl;
  /** Who is an owner and who a guest (installed by the access feature). */
  authority: () => AuthorityPort;
  hooks: () => readonly AgentHooks[];
  buttonHandlers: () => readonly ButtonHandler[];
  settings: {
    maxIterations: number;
    maxConcurrentTurns: number;
    historyTokens: number;
    timezone: string;
    globalPrompt?: string;
    llm: { baseUrl?: string; timeoutMs: number };
    /** Stream drafts into channels that can edit messages. */
    streaming: boolean;
    /** `security.guestToolSet`: the most a guest's turn may use. */
    guestToolSet: string[];
  };
}

const TYPING_INTERVAL_MS = 4_000;

/** A prompt run as an agent turn outside the chat queue. */
export interface IsolatedRunInput {
  prompt: string;
  /** Session used for history; a fresh one per call keeps runs independent. */
  sessionKey: string;
  /** Where tool calls such as `message` default to. */
  target: ReplyTarget;
  toolSet?: string | string[];
  signal?: AbortSignal;
  depth?: number;
  /** What started the run (a job, a delegation …). */
  origin: TurnOrigin;
  /** Whose authority the run carries (a job's creator). */
  sender: SenderIdentity;
}

export interface IsolatedRunResult {
  ok: boolean;
  text: string;
}

/**
 * The message hub: access control → inbox (dedupe) → slash commands or the per-session queue → agent turn →
 * outbox. Implements the adapters' InboundSink.
 */
export class Router implements InboundSink {
  readonly queues: SessionQueues;
  private readonly startedAt: number;

  constructor(private readonly options: RouterOptions) {
    this.startedAt = options.clock.now();
    this.queues = new SessionQueues(
      (sessionKey, ids, signal) => this.runTurn(sessionKey, ids, signal),
      options.settings.maxConcurrentTurns,
      (error, sessionKey) => options.logger.error({ err: error, session: sessionKey }, "turn-crashed"),
    );
  }

  get uptimeMs(): number {
    return this.options.clock.now() - this.startedAt;
  }

  async message(inbound: InboundMessage): Promise<AcceptResult> {
    const { store, logger } = this.options;
    const decision = await this.options.access().check(inbound);
    if (!decision.allow) {
      logger.debug(
        { channel: inbound.channel, chatId: inbound.chatId, reason: decision.reason },
        "message-denied",
      );
      if (decision.reply)
        this.send(replyTargetOf(inbound), { text: decision.reply, format: "plain" }, "pairing");
      return { status: "denied", reason: decision.reason };
    }
    const sessionKey = sessionKeyOf(inbound);
    const command = parseCommand(inbound.text);
    const inboxId = store.inbox.insert(inbound, sessionKey, command ? "processing" : "pending");
    if (inboxId === null) {
      logger.debug({ channel: inbound.channel, messageId: inbound.messageId }, "message-duplicate");
      return { status: "duplicate" };
    }
    logger.debug({ session: sessionKey, inboxId, command: command?.name }, "message-received");
    if (command) await this.runCommand(inboxId, inbound, sessionKey, command);
    else this.queues.enqueue(sessionKey, inboxId);
    return { status: "accepted", inboxId };
  }

  async buttonPressed(press: ButtonPress): Promise<void> {
    if (this.options.access().allowsPress?.(press) === false) {
      this.options.logger.debug({ channel: press.channel, chatId: press.chatId }, "button-press-denied");
      return;
    }
    for (const handler of this.options.buttonHandlers()) {
      try {
        if (await handler(press)) return;
      } catch (error) {
        this.options.logger.warn({ err: error, button: press.buttonId }, "button-handler-failed");
      }
    }
    this.options.logger.debug({ button: press.buttonId }, "button-unclaimed");
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

  /** Aborts a session's running turn and drops what waits behind it (/stop). */
  stop(sessionKey: string): { aborted: boolean; dropped: number } {
    const dropped = this.queues.dropPending(sessionKey);
    if (dropped.length > 0) this.options.store.inbox.setStatus(dropped, "done", this.options.clock.now());
    return { aborted: this.queues.abort(sessionKey, "stop"), dropped: dropped.length };
  }

  /**
   * After a restart: messages never started are queued again (a session's are collected into one turn); a
   * turn that was running when the process died is reported with one "interrupted" notice per session, however
   * many messages it held (re-running it could repeat side effects).
   */
  recover(): { resumed: number; interrupted: number; notices: number } {
    const { store, logger, clock } = this.options;
    let resumed = 0;
    let interrupted = 0;
    const cutOff = new Map<string, InboxItem[]>();
    for (const item of store.inbox.unfinished()) {
      if (item.status === "pending") {
        this.queues.enqueue(item.sessionKey, item.id);
        resumed++;
      } else {
        const items = cutOff.get(item.sessionKey) ?? [];
        items.push(item);
        cutOff.set(item.sessionKey, items);
      }
    }
    for (const items of cutOff.values()) {
      const last = items[items.length - 1]!;
      store.db.transaction(() => {
        store.outbox.enqueue(
          replyTargetOf(last.message),
          { text: INTERRUPTED_REPLY, format: "plain" },
          { origin: "notice", inboxId: last.id, at: clock.now() },
        );
        store.inbox.setStatus(
          items.map((item) => item.id),
          "interrupted",
          clock.now(),
        );
      })();
      interrupted += items.length;
    }
    if (resumed || interrupted)
      logger.info({ resumed, interrupted, notices: cutOff.size }, "inbox-recovered");
    this.options.outbox.wake();
    return { resumed, interrupted, notices: cutOff.size };
  }

  /** Runs one prompt as an agent turn outside the chat queue (scheduled prompts, delegation). */
  async runIsolated(input: IsolatedRunInput & { agent: AgentProfile }): Promise<IsolatedRunResult> {
    if (!this.options.model) return { ok: false, text: NO_LLM_REPLY };
    const { store } = this.options;
    store.history.ensureSession(input.sessionKey, input.agent.name, this.options.clock.now());
    const outcome = await this.executeTurn({
      agent: input.agent,
      sessionKey: input.sessionKey,
      text: input.prompt,
      target: input.target,
      sender: input.sender,
      origin: input.origin,
      // Nobody watches an isolated run: approvals and Warn verdicts are refused, not asked.
      canAsk: false,
      channel: input.target.channel,
      isDirect: true,
      toolSet: input.toolSet,
      signal: input.signal ?? new AbortController().signal,
      depth: input.depth ?? 0,
    });
    store.history.append(input.sessionKey, withTokens(outcome.newMessages), this.options.clock.now());
    return { ok: outcome.status === "ok", text: outcome.reply };
  }

  private async runCommand(
    inboxId: number,
    inbound: InboundMessage,
    sessionKey: string,
    command: { name: string; args: string },
  ): Promise<void> {
    const { store, logger, commands } = this.options;
    const target = replyTargetOf(inbound);
    const handler = commands.get(command.name);
    const sender = this.identify(inbound.channel, inbound.userId, inbound.userName);
    let reply: string | OutboundMessage;
    try {
      if (handler && sender.role !== "owner" && commands.isOwnerOnly(command.name)) {
        reply = `Only an owner can use /${command.name}.`;
        this.auditRefusal(sessionKey, sender, `/${command.name}`, command.args, "command.owner_only");
      } else {
        reply = handler
          ? await handler.run({ message: inbound, sender, sessionKey, args: command.args, target })
          : `Unknown command /${command.name}. Send /help for the list.`;
      }
    } catch (error) {
      logger.warn({ err: error, command: command.name }, "command-failed");
      reply = `/${command.name} failed: ${errorMessage(error)}`;
    }
    const message = typeof reply === "string" ? { text: reply } : reply;
    store.db.transaction(() => {
      if (message.text) {
        store.outbox.enqueue(target, message, { origin: "command", inboxId, at: this.options.clock.now() });
      }
      store.inbox.setStatus([inboxId], "done", this.options.clock.now());
    })();
    this.options.outbox.wake();
  }

  /** The sender with their role on the channel (owner or guest), from the one authority. */
  identify(channel: string, userId: string, userName?: string): SenderIdentity {
    return {
      channel,
      userId,
      ...(userName ? { userName } : {}),
      role: this.options.authority().roleOf(channel, userId),
    };
  }

  /** Records a refused command or button press in the audit log. */
  private auditRefusal(
    sessionKey: string,
    sender: SenderIdentity,
    action: string,
    args: string,
    code: string,
  ): void {
    try {
      this.options.store.audit.record({
        sessionKey,
        tool: action,
        arguments: JSON.stringify({ args: args.slice(0, 200), sender: `${sender.channel}:${sender.userId}` }),
        verdict: "deny",
        outcome: "denied",
        errorCode: code,
        durationMs: 0,
        at: this.options.clock.now(),
      });
    } catch (error) {
      this.options.logger.error({ err: error }, "audit-write-failed");
    }
  }

  private async runTurn(sessionKey: string, inboxIds: number[], signal: AbortSignal): Promise<void> {
    const { store, clock } = this.options;
    const items = inboxIds.flatMap((id) => store.inbox.get(id) ?? []);
    const last = items[items.length - 1];
    if (!last) return;
    store.inbox.setStatus(inboxIds, "processing", clock.now());
    const target = replyTargetOf(last.message);

    if (!this.options.model) {
      this.finishTurn(inboxIds, sessionKey, target, NO_LLM_REPLY, []);
      return;
    }
    const agent = this.options.agents.forMessage(last.message);
    const sender = this.identify(last.message.channel, last.message.userId, last.message.userName);
    const role = sender.role;
    store.history.ensureSession(sessionKey, agent.name, clock.now());
    const adapter = this.options.adapters().get(target.channel);
    const stopTyping = startTyping(adapter, target);
    const preview =
      this.options.settings.streaming && adapter?.capabilities.edit && adapter.edit
        ? new StreamPreview(adapter, target)
        : undefined;
    try {
      const outcome = await this.executeTurn({
        agent,
        sessionKey,
        text: items.map((item) => describeInbound(item.message)).join("\n\n"),
        target,
        sender,
        origin: "user",
        canAsk: role === "owner",
        channel: last.message.channel,
        isDirect: last.message.isDirect,
        signal,
        depth: 0,
        onTextDelta: preview ? (delta) => preview.push(delta) : undefined,
      });
      const draftId = await preview?.finish();
      if (outcome.status === "aborted" && signal.reason === "shutdown") {
        // Checkpoint: the turn is re-run after the restart instead of being lost.
        store.inbox.setStatus(inboxIds, "pending", clock.now());
        return;
      }
      const reply = outcome.status === "aborted" ? "" : outcome.reply;
      this.finishTurn(inboxIds, sessionKey, target, reply, outcome.newMessages, draftId);
      if (outcome.status !== "aborted") await this.maybeCompact(sessionKey, agent, role);
    } finally {
      stopTyping();
    }
  }

  private async executeTurn(input: {
    agent: AgentProfile;
    sessionKey: string;
    text: string;
    target: ReplyTarget;
    sender: SenderIdentity;
    origin: TurnOrigin;
    canAsk: boolean;
    channel: string;
    isDirect: boolean;
    signal: AbortSignal;
    depth: number;
    toolSet?: string | string[];
    onTextDelta?: (delta: string) => void;
  }) {
    const { store, settings, tools } = this.options;
    const wanted = tools.resolveToolSet(input.toolSet ?? input.agent.toolSet);
    // A guest's turn gets at most security.guestToolSet, whatever the agent or route would give.
    const guestLimit =
      input.sender.role === "guest" ? new Set(tools.resolveToolSet(settings.guestToolSet)) : null;
    const toolNames = guestLimit ? wanted.filter((name) => guestLimit.has(name)) : wanted;
    const stored = store.history.load(input.sessionKey);
    const history = recentWithinBudget(stored, Math.floor(settings.historyTokens * 1.5)).map(
      (item) => item.message,
    );
    const recalled: string[] = [];
    for (const hooks of this.options.hooks()) {
      if (!hooks.recall) continue;
      try {
        const text = await hooks.recall({
          sessionKey: input.sessionKey,
          agent: input.agent.name,
          text: input.text,
          role: input.sender.role,
        });
        if (text) recalled.push(text);
      } catch (error) {
        this.options.logger.warn({ err: error }, "recall-hook-failed");
      }
    }
    const systemPrompt = buildSystemPrompt({
      agent: input.agent,
      globalPrompt: settings.globalPrompt,
      timezone: settings.timezone,
      now: new Date(this.options.clock.now()),
      channel: input.channel,
      isDirect: input.isDirect,
      summary: store.history.summary(input.sessionKey),
      recalled,
      toolNames,
    });
    return runAgentTurn(
      {
        model: this.options.model!,
        tools,
        logger: this.options.logger,
        maxIterations: settings.maxIterations,
        llm: settings.llm,
      },
      {
        agent: input.agent,
        systemPrompt,
        history,
        userText: input.text,
        toolNames,
        context: {
          sessionKey: input.sessionKey,
          agent: input.agent.name,
          target: input.target,
          userId: input.sender.userId,
          sender: input.sender,
          origin: input.origin,
          canAsk: input.canAsk,
          ...(input.canAsk ? { approver: { target: input.target, identity: input.sender } } : {}),
          signal: input.signal,
          depth: input.depth,
        },
        onTextDelta: input.onTextDelta,
      },
    );
  }

  /** Persists history, queues the reply and closes the inbox items in one transaction: all or nothing. */
  private finishTurn(
    inboxIds: number[],
    sessionKey: string,
    target: ReplyTarget,
    reply: string,
    newMessages: ChatMessage[],
    draftId?: string,
  ): void {
    const { store, clock } = this.options;
    store.db.transaction(() => {
      if (newMessages.length > 0) store.history.append(sessionKey, withTokens(newMessages), clock.now());
      if (reply) {
        store.outbox.enqueue(
          target,
          { text: reply, ...(draftId ? { editMessageId: draftId } : {}) },
          { origin: "reply", inboxId: inboxIds[inboxIds.length - 1], at: clock.now() },
        );
      }
      store.inbox.setStatus(inboxIds, "done", clock.now());
    })();
    this.options.outbox.wake();
  }

  private async maybeCompact(sessionKey: string, agent: AgentProfile, role: Role): Promise<void> {
    const result = await compactHistory({
      history: this.options.store.history,
      sessionKey,
      model: this.options.model!,
      modelName: agent.model,
      budget: this.options.settings.historyTokens,
      logger: this.options.logger,
    });
    if (!result) return;
    this.options.logger.info({ session: sessionKey, removed: result.removed }, "history-compacted");
    for (const hooks of this.options.hooks()) {
      try {
        await hooks.onCompacted?.({ sessionKey, agent: agent.name, summary: result.summary, role });
      } catch (error) {
        this.options.logger.warn({ err: error }, "compaction-hook-failed");
      }
    }
  }
}

function withTokens(messages: ChatMessage[]) {
  return messages.map((message) => ({ message, tokens: estimateMessageTokens(message) }));
}

/** The user's text plus a line per attachment, so the model knows what came with it. */
function describeInbound(message: InboundMessage): string {
  const lines = [message.text];
  for (const attachment of message.attachments) {
    const details = [attachment.mime, attachment.size !== undefined ? `${attachment.size} bytes` : undefined]
      .filter(Boolean)
      .join(", ");
    lines.push(
      `[attachment: ${attachment.kind}${attachment.name ? ` "${attachment.name}"` : ""}${details ? ` (${details})` : ""}]`,
    );
  }
  return lines.filter(Boolean).join("\n");
}

function startTyping(adapter: ChannelAdapter | undefined, target: ReplyTarget): () => void {
  if (!adapter?.typing || !adapter.capabilities.typing) return () => {};
  const tick = () => void adapter.typing?.(target).catch(() => {});
  tick();
  const timer = setInterval(tick, TYPING_INTERVAL_MS);
  return () => clearInterval(timer);
}
