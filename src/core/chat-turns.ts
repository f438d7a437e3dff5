import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { errorMessage } from "../lib/errors.js";
import { isOutageCode } from "../llm/failure-kind.js";
import type { ChatMessage } from "../llm/types.js";
import { atomic } from "../store/atomic.js";
import type { InboxItem } from "../store/inbox.js";
import type { Store } from "../store/index.js";
import { describeDoneSteps } from "../store/step-journal.js";
import { completedRounds, STOPPED_NOTE, type TurnJournal } from "./agent-loop.js";
import type { AgentDirectory } from "./agents.js";
import type { Clock } from "./clock.js";
import { type EventPublisher, type MessageOutcome, NO_EVENTS } from "./events.js";
import type { AgentHooks, AnsweredTurn } from "./hooks.js";
import type { AuthorityPort, SenderIdentity, TurnOrigin } from "./identity.js";
import type { MediaContext, MediaPort, PreparedMedia } from "./media.js";
import { sessionModel } from "./model-command.js";
import { NO_LLM_REPLY } from "./no-llm.js";
import { type ChatOutage, duration, OutageWaits, outageGiveUp } from "./outage-wait.js";
import type { OutboxWorker } from "./outbox-worker.js";
import { outcomeOfTurn, settleOutcome } from "./outcomes.js";
import { ProgressNote } from "./progress-note.js";
import { chatTurnJournalId, interruptedNotice } from "./recovery.js";
import { replyTargetOf } from "./session-key.js";
import type { SessionQueues } from "./session-queue.js";
import type { BudgetScope } from "./spend.js";
import { StreamPreview } from "./stream-preview.js";
import { TurnApprovals } from "./turn-approvals.js";
import { type TurnEngine, withTokens } from "./turn-engine.js";
import { chatSeed, historyTaint, rememberHistoryTaint } from "./turn-provenance.js";
import type { ChannelAdapter, InboundMessage, ReplyTarget } from "./types.js";

export interface ChatTurnsOptions {
  store: Store;
  logger: Logger;
  clock: Clock;
  engine: TurnEngine;
  /** The app's publisher on the core event stream (default: publishes nothing). */
  events?: EventPublisher;
  agents: AgentDirectory;
  outbox: OutboxWorker;
  adapters: () => ReadonlyMap<string, ChannelAdapter>;
  authority: () => AuthorityPort;
  /** Photos and voice notes for the model; null when not set up. */
  media: () => MediaPort | null;
  /** Extension points; `afterReply` hears of each answered chat turn (voice replies). */
  hooks?: () => readonly AgentHooks[];
  /** Stream drafts into channels that can edit messages. */
  streaming: boolean;
  /** `agent.progressNoticeSecs`: a turn still running after this sends one "still working" note (0 = off). */
  progressNoticeSecs?: number;
  /** `agent.retryOutageForSecs`: how long a turn whose models are all unreachable waits for them (0 = off). */
  retryOutageForSecs?: number;
}

/** How a turn's run ended: settled (its messages have their outcome), or held up by an LLM outage. */
type TurnEnd =
  | { kind: "settled"; answered: boolean }
  | { kind: "outage"; errorCode: string; reply: string; newMessages: ChatMessage[] };

const TYPING_INTERVAL_MS = 4_000;

/** A note put into a session by Magpie itself (a subagent's result, an event). */
export interface SessionNote {
  /** The chat the note belongs to (and its follow-up turn answers in). */
  target: ReplyTarget;
  /** Whose authority the follow-up turn carries: who started the work the note reports on. */
  sender: SenderIdentity;
  origin: "spawn" | "event";
  /** What the model reads. */
  text: string;
  /** Shown in the chat as it is put in (e.g. the subagent's result); omit to show nothing. */
  show?: string;
  label?: string;
  isDirect?: boolean;
  /** The budgets of the turn that caused the note: the follow-up turn counts against them, not fresh ones. */
  budget?: BudgetScope;
  /** A spawn's result: whether the work read untrusted content (absent: unknown, counted as untrusted). */
  untrusted?: boolean;
}

/**
 * Turns of chat sessions, fed by the inbox: the messages collected for a session become one turn request for the
 * engine; its history, reply and the inbox items' state are then written in one transaction.
 */
export class ChatTurns {
  private readonly events: EventPublisher;
  private readonly outages: OutageWaits;

  constructor(
    private readonly options: ChatTurnsOptions,
    private readonly queues: () => SessionQueues,
  ) {
    this.events = options.events ?? NO_EVENTS;
    this.outages = new OutageWaits({
      store: options.store,
      clock: options.clock,
      limitSecs: () => options.retryOutageForSecs ?? 0,
    });
  }

  /** Whether the session's turn is parked, waiting out an LLM outage (/stop says it dropped it). */
  isParked(sessionKey: string): boolean {
    return this.outages.isParked(sessionKey);
  }

  /**
   * Puts a note into a session: it is stored in the inbox like a message (durable, once) and starts a follow-up
   * turn there. Returns the inbox id.
   */
  note(note: SessionNote): number {
    const { store, clock } = this.options;
    const message: InboundMessage = {
      channel: note.target.channel,
      chatId: note.target.chatId,
      ...(note.target.threadId ? { threadId: note.target.threadId } : {}),
      messageId: `note:${randomUUID()}`,
      userId: note.sender.userId,
      userName: note.sender.userName ?? note.sender.userId,
      text: note.text,
      isDirect: note.isDirect ?? true,
      mentionsBot: true,
      attachments: [],
      receivedAt: clock.now(),
      note: {
        origin: note.origin,
        ...(note.label ? { label: note.label } : {}),
        ...(note.budget ? { budget: note.budget } : {}),
        ...(note.untrusted !== undefined ? { untrusted: note.untrusted } : {}),
      },
    };
    const sessionKey = sessionKeyOfTarget(note.target);
    let inboxId = 0;
    atomic(store.db, () => {
      inboxId = store.inbox.insert(message, sessionKey, "pending")!;
      if (note.show) {
        const { threadId } = note.target;
        store.outbox.enqueue(
          { channel: note.target.channel, chatId: note.target.chatId, ...(threadId ? { threadId } : {}) },
          { text: note.show },
          { origin: "notice", inboxId, at: clock.now() },
        );
      }
    });
    this.options.outbox.wake();
    this.queues().enqueue(sessionKey, inboxId);
    return inboxId;
  }

  /** Runs the turn for a session's collected inbox items (the queue's runner). */
  async run(sessionKey: string, inboxIds: number[], signal: AbortSignal): Promise<void> {
    const { store, clock, engine } = this.options;
    // Only messages still waiting: an id can be queued twice when a message arrives while start-up recovery
    // runs (the intake and the recovery both queue it); the second time it is already answered.
    const items = [...new Set(inboxIds)].flatMap((id) => {
      const item = store.inbox.get(id);
      return item && item.status === "pending" ? [item] : [];
    });
    inboxIds = items.map((item) => item.id);
    const last = items[items.length - 1];
    if (!last) return;
    // Started means running: the messages are marked so only once the turn holds a slot (see onStart).
    const markStarted = () => store.inbox.setStatus(inboxIds, "processing", clock.now());
    const target = last.message.note ? targetWithoutReply(last.message) : replyTargetOf(last.message);

    if (!engine.hasModel) {
      markStarted();
      this.finish(inboxIds, sessionKey, target, NO_LLM_REPLY, [], undefined, {
        outcome: "failed",
        cause: "llm.not_configured",
      });
      return;
    }
    try {
      await this.runUntilSettled(sessionKey, items, target, signal, markStarted);
    } catch (error) {
      // Never silence: whatever broke inside Magpie, the chat is told and the messages end failed.
      this.options.logger.error({ err: error, session: sessionKey }, "turn-crashed");
      this.outages.settled(sessionKey, false);
      const open = inboxIds.filter((id) => store.inbox.get(id)?.outcome === null);
      if (open.length === 0) return;
      this.finish(
        open,
        sessionKey,
        target,
        `Something went wrong inside Magpie while answering (${errorMessage(error).slice(0, 200)}), so I stopped. Please try again.`,
        [],
        undefined,
        { outcome: "failed", cause: "turn.crashed" },
      );
    }
  }

  /**
   * Runs the turn; while it ends in an LLM outage it is parked and tried again (DESIGN.md → Waiting out an outage):
   * the lane stays busy, so the chat's later messages wait behind it and are answered after it, in order.
   */
  private async runUntilSettled(
    sessionKey: string,
    items: InboxItem[],
    target: ReplyTarget,
    signal: AbortSignal,
    markStarted: () => void,
  ): Promise<void> {
    const { clock, logger } = this.options;
    const inboxIds = items.map((item) => item.id);
    // Parked before a restart: its back-off goes on where it was.
    let waited = this.outages.enabled ? this.outages.outageOf(sessionKey) : undefined;
    if (
      waited &&
      waited.retryAt > clock.now() &&
      !(await this.waitOut(sessionKey, inboxIds, waited.retryAt, signal, this.journaledRounds(items)))
    )
      return;
    for (;;) {
      const end = await this.runTurn(sessionKey, items, target, signal, markStarted, waited);
      if (end.kind === "settled") {
        this.outages.settled(sessionKey, end.answered);
        return;
      }
      const { decision, noticed } = this.outages.park(sessionKey, items, target, end.errorCode);
      this.options.outbox.wake();
      if (decision.kind === "give-up") {
        this.finish(
          inboxIds,
          sessionKey,
          target,
          outageGiveUp(decision.waitedMs, decision.attempts, end.reply, this.doneSteps(inboxIds)),
          end.newMessages,
          undefined,
          { outcome: "failed", cause: `${end.errorCode} (waited ${duration(decision.waitedMs)})` },
        );
        return;
      }
      logger.info(
        { session: sessionKey, inboxIds, code: end.errorCode, retryAt: decision.retryAt, noticed },
        "turn-parked",
      );
      if (!(await this.waitOut(sessionKey, inboxIds, decision.retryAt, signal, end.newMessages))) return;
      waited = this.outages.outageOf(sessionKey);
    }
  }

  /**
   * Waits for a parked turn's next try; false when it must not be tried now: /stop or /reset dropped it (its
   * messages end `interrupted`), or Magpie is stopping (they stay pending with their outage: the restart goes on).
   */
  private async waitOut(
    sessionKey: string,
    inboxIds: number[],
    until: number,
    signal: AbortSignal,
    /** What the last try did (its request, completed tool rounds, failure text): kept in history if /stop drops it. */
    done: ChatMessage[] = [],
  ): Promise<boolean> {
    try {
      await this.outages.wait(sessionKey, until, AbortSignal.any([signal, this.queues().stopping]));
      return true;
    } catch {
      if (signal.aborted && signal.reason === "stop") {
        const { store, clock } = this.options;
        atomic(store.db, () => {
          // The tool calls it already ran stay in history: the next turn's model knows they took effect.
          if (done.length > 1) store.history.append(sessionKey, withTokens(done), clock.now());
          store.inbox.setStatus(inboxIds, "done", clock.now());
          // A parked turn whose tools already ran keeps its journal while it waits: dropped, it goes too.
          for (const id of inboxIds) store.journal.clear(chatTurnJournalId(id));
          settleOutcome(store, this.events, inboxIds, "interrupted", "stopped");
        });
        this.outages.settled(sessionKey, false);
      }
      return false;
    }
  }

  /**
   * What a turn parked before a restart had done, from its step journal (it has no try in this process yet): its
   * request and every completed tool round, then a note that it was stopped — kept in history if /stop drops it, so
   * the next turn's model knows what already took effect.
   */
  private journaledRounds(items: InboxItem[]): ChatMessage[] {
    const { store } = this.options;
    const steps = items.flatMap((item) => store.journal.steps(chatTurnJournalId(item.id)));
    const results = new Map<string, string>();
    for (const step of steps) if (step.kind === "result") results.set(step.callId, step.output);
    const rounds: ChatMessage[] = [];
    for (const step of steps) {
      if (step.kind !== "llm") continue;
      rounds.push(step.message);
      for (const call of step.message.tool_calls ?? []) {
        const output = results.get(call.id);
        if (output !== undefined) rounds.push({ role: "tool", tool_call_id: call.id, content: output });
      }
    }
    const completed = completedRounds(rounds);
    if (completed.length === 0) return [];
    const request = items.map((item) => describeInbound(item.message)).join("\n\n");
    return [{ role: "user", content: request }, ...completed, { role: "assistant", content: STOPPED_NOTE }];
  }

  private async runTurn(
    sessionKey: string,
    items: InboxItem[],
    target: ReplyTarget,
    signal: AbortSignal,
    markStarted: () => void,
    waited: ChatOutage | undefined,
  ): Promise<TurnEnd> {
    const { store, clock, engine } = this.options;
    const inboxIds = items.map((item) => item.id);
    const last = items[items.length - 1]!;
    const agent = this.options.agents.forMessage(last.message);
    const sender = this.senderOf(items.map((item) => item.message));
    const role = sender.role;
    const origin: TurnOrigin = last.message.note?.origin ?? "user";
    const model = sessionModel(store.kv, sessionKey);
    // A follow-up spends from the budgets of the turn that caused it. Otherwise the turn is named after its first
    // message, so running it again after a restart continues its perTurn spending instead of starting over.
    const budget: BudgetScope = items.find((item) => item.message.note?.budget)?.message.note?.budget ?? {
      sessionKey,
      turnId: `inbox:${items[0]!.id}`,
    };
    // The session's row goes with the messages' start, in one commit (issue 35, hot path: two before).
    const start = () =>
      atomic(store.db, () => {
        store.history.ensureSession(sessionKey, agent.name, clock.now());
        markStarted();
      });
    // The step journal (DESIGN.md → Durable turns): a cut-off run of this turn left its steps; this run resumes
    // after them — unless the agent or model that took them is no longer this turn's.
    // A resumed turn can hold more than one cut-off run (a restart took a new message and was killed before its
    // recovery queued the older ones): every journal of its messages is replayed, in order, and new steps go to
    // the first one (the messages' journals all go with the reply).
    const keys = items.map((item) => chatTurnJournalId(item.id));
    const journals = keys.map((key) => ({ key, steps: store.journal.steps(key) }));
    const journalId = journals.find((journal) => journal.steps.length > 0)?.key ?? keys[0]!;
    const earlier = journals.flatMap((journal) => journal.steps);
    const changed = earlier.find(
      (step) => step.kind === "llm" && (step.agent !== agent.name || step.model !== (model ?? agent.model)),
    );
    if (changed?.kind === "llm") {
      start();
      this.finish(
        inboxIds,
        sessionKey,
        target,
        interruptedNotice(describeDoneSteps(earlier)),
        [],
        undefined,
        {
          outcome: "interrupted",
          cause: changed.agent !== agent.name ? "resume.agent_gone" : "resume.model_gone",
        },
      );
      return { kind: "settled", answered: false };
    }
    const journal: TurnJournal = {
      steps: earlier,
      write: (step) => store.journal.append(journalId, step),
      atomically: (write) => store.journal.atomically(write),
      now: () => clock.now(),
    };
    const adapter = this.options.adapters().get(target.channel);
    const stopTyping = startTyping(adapter, target);
    const progress = new ProgressNote(adapter, target, this.options.progressNoticeSecs ?? 0, () =>
      clock.now(),
    );
    const preview =
      this.options.streaming && adapter?.capabilities.edit && adapter.edit
        ? new StreamPreview(adapter, target)
        : undefined;
    try {
      const media = await this.prepareMedia(
        items.map((item) => item.message),
        adapter,
        { sessionKey, agent: agent.name, signal, budget },
      );
      const text = [items.map((item) => describeInbound(item.message)).join("\n\n"), ...media.notes]
        .filter(Boolean)
        .join("\n");
      // The rule of two: what untrusted content the turn starts with (src/core/turn-provenance.ts).
      const authority = this.options.authority();
      const turnApprovals = new TurnApprovals();
      const untrusted = chatSeed(
        items.map((item) => item.message),
        (channel, userId) => authority.roleOf(channel, userId),
        historyTaint(store.kv, sessionKey),
        adapter?.capabilities.messageNoun,
      );
      const outcome = await engine.run({
        origin,
        sessionKey,
        inboxIds,
        turnApprovals,
        untrusted,
        agent,
        ...(model ? { model } : {}),
        sender,
        target,
        text,
        ...(media.images.length ? { images: media.images } : {}),
        channel: last.message.channel,
        isDirect: last.message.isDirect,
        depth: 0,
        budget,
        // An owner's own chat: approvals and questions go to them, here.
        canAsk: role === "owner",
        ...(role === "owner" ? { approver: { target, identity: sender } } : {}),
        signal,
        onStart: start,
        journal,
        onActivity: (activity) => progress.set(activity),
        onTextDelta: preview ? (delta) => preview.push(delta) : undefined,
      });
      progress.stop();
      const draftId = await preview?.finish();
      if (outcome.status === "aborted" && signal.reason === "shutdown") {
        // Checkpoint: the turn resumes from its step journal after the restart instead of being lost; an
        // approval it was waiting for is asked again under the same id (DESIGN.md → Durable turns).
        store.inbox.setStatus(inboxIds, "pending", clock.now());
        return { kind: "settled", answered: false };
      }
      // Every model unreachable: the turn waits the outage out instead of failing. The tool calls it already ran
      // are in its step journal, which stays: the next try resumes after them and never runs them again.
      if (outcome.status === "error" && this.outages.enabled && isOutageCode(outcome.errorCode)) {
        return {
          kind: "outage",
          errorCode: outcome.errorCode ?? "llm.unavailable",
          reply: outcome.reply,
          newMessages: outcome.newMessages,
        };
      }
      rememberHistoryTaint(store.kv, sessionKey, turnApprovals.provenance);
      const reply = outcome.status === "aborted" ? "" : outcome.reply;
      this.finish(
        inboxIds,
        sessionKey,
        target,
        reply,
        outcome.newMessages,
        draftId,
        outcome.status === "ok" && waited
          ? {
              outcome: "answered",
              cause: `after waiting ${duration(clock.now() - waited.since)} for the model (${waited.attempts} failed ${waited.attempts === 1 ? "try" : "tries"})`,
            }
          : outcomeOfTurn(outcome.status, outcome.errorCode),
      );
      if (outcome.status === "ok" && reply) {
        this.afterReply({
          sessionKey,
          agent: agent.name,
          target,
          reply,
          messages: items.map((item) => item.message),
          inboxId: last.id,
          budget,
        });
      }
      if (outcome.status !== "aborted") await engine.compact(sessionKey, agent, role, { budget, origin });
      return { kind: "settled", answered: outcome.status === "ok" };
    } finally {
      progress.stop();
      stopTyping();
    }
  }

  /** What a parked turn's step journals say it already did (its tool calls), for the give-up notice. */
  private doneSteps(inboxIds: number[]): string[] {
    const { journal } = this.options.store;
    return describeDoneSteps(inboxIds.flatMap((id) => journal.steps(chatTurnJournalId(id))));
  }

  /** Tells the hooks of an answered turn, in the background: the text reply never waits for them. */
  private afterReply(turn: AnsweredTurn): void {
    for (const hooks of this.options.hooks?.() ?? []) {
      hooks
        .afterReply?.(turn)
        .catch((error: unknown) =>
          this.options.logger.warn({ err: error, session: turn.sessionKey }, "after-reply-hook-failed"),
        );
    }
  }

  /** Photos and voice notes of the turn's messages for the model; a failure costs the user nothing but them. */
  private async prepareMedia(
    messages: InboundMessage[],
    adapter: ChannelAdapter | undefined,
    context: MediaContext,
  ): Promise<PreparedMedia> {
    const media = this.options.media();
    if (!media || messages.every((message) => message.attachments.length === 0))
      return { images: [], notes: [] };
    try {
      return await media.prepare(messages, adapter, context);
    } catch (error) {
      this.options.logger.warn({ err: error, session: context.sessionKey }, "media-prepare-failed");
      return {
        images: [],
        notes: ["[The attachments could not be prepared for the model; only their description is here.]"],
      };
    }
  }

  /**
   * Whose authority a turn of collected messages carries: the strictest — if any of them came from a guest
   * (a group where a guest wrote just before the owner), the whole turn is a guest's.
   */
  private senderOf(messages: InboundMessage[]): SenderIdentity {
    const authority = this.options.authority();
    const identities = messages.map((message) => ({
      channel: message.channel,
      userId: message.userId,
      userName: message.userName,
      role: authority.roleOf(message.channel, message.userId),
    }));
    return identities.find((identity) => identity.role === "guest") ?? identities[identities.length - 1]!;
  }

  /**
   * Persists history, queues the reply and closes the inbox items with their outcome in one transaction: all or
   * nothing.
   */
  private finish(
    inboxIds: number[],
    sessionKey: string,
    target: ReplyTarget,
    reply: string,
    newMessages: ChatMessage[],
    draftId: string | undefined,
    ending: { outcome: MessageOutcome; cause?: string },
  ): void {
    const { store, clock } = this.options;
    atomic(store.db, () => {
      if (newMessages.length > 0) store.history.append(sessionKey, withTokens(newMessages), clock.now());
      if (reply) {
        store.outbox.enqueue(
          target,
          { text: reply, ...(draftId ? { editMessageId: draftId } : {}) },
          { origin: "reply", inboxId: inboxIds[inboxIds.length - 1], at: clock.now() },
        );
      }
      store.inbox.setStatus(inboxIds, "done", clock.now());
      // The turn is over: its step journal goes with the reply that ends it.
      for (const id of inboxIds) store.journal.clear(chatTurnJournalId(id));
      settleOutcome(store, this.events, inboxIds, ending.outcome, ending.cause);
    });
    this.options.outbox.wake();
  }
}

function sessionKeyOfTarget(target: ReplyTarget): string {
  return target.threadId
    ? `${target.channel}:${target.chatId}:${target.threadId}`
    : `${target.channel}:${target.chatId}`;
}

function targetWithoutReply(message: InboundMessage): ReplyTarget {
  return {
    channel: message.channel,
    chatId: message.chatId,
    ...(message.threadId ? { threadId: message.threadId } : {}),
  };
}

/** The user's text plus a line per attachment, so the model knows what came with it. */
function describeInbound(message: InboundMessage): string {
  if (message.note) {
    return `[${message.note.origin === "spawn" ? "Background task result" : "Event"}${message.note.label ? ` — ${message.note.label}` : ""}; not typed by the user]\n${message.text}`;
  }
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
  // The first one goes out once the turn's LLM request is on its way (issue 35, hot path): sent at once, a call to
  // the platform's API came before the request.
  const first = setImmediate(tick);
  const timer = setInterval(tick, TYPING_INTERVAL_MS);
  return () => {
    clearImmediate(first);
    clearInterval(timer);
  };
}
