import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { estimateMessageTokens } from "../llm/tokens.js";
import type { ChatMessage, ChatModel } from "../llm/types.js";
import type { Store } from "../store/index.js";
import { runAgentTurn, type TurnOutcome } from "./agent-loop.js";
import type { AgentProfile } from "./agents.js";
import type { Clock } from "./clock.js";
import { compactHistory, recentWithinBudget } from "./compaction.js";
import { type EventPublisher, NO_EVENTS } from "./events.js";
import type { AgentHooks } from "./hooks.js";
import type { Role, TurnOrigin } from "./identity.js";
import { NO_LLM_REPLY } from "./no-llm.js";
import type { BudgetScope, SpendPort } from "./spend.js";
import { buildSystemPrompt } from "./system-prompt.js";
import type { ToolRuntime } from "./tool-runtime.js";
import { TurnApprovals } from "./turn-approvals.js";
import type { TurnRequest } from "./turn-request.js";
import type { TurnSlots } from "./turn-slots.js";

export interface TurnEngineOptions {
  store: Store;
  logger: Logger;
  clock: Clock;
  model: ChatModel | null;
  tools: ToolRuntime;
  hooks: () => readonly AgentHooks[];
  slots: TurnSlots;
  /** The app's publisher on the core event stream (default: publishes nothing). */
  events?: EventPublisher;
  /** Budgets and the usage ledger, asked around every LLM call (null when not set up). */
  spend?: () => SpendPort | null;
  settings: {
    maxIterations: number;
    historyTokens: number;
    timezone: string;
    globalPrompt?: string;
    llm: { baseUrl?: string; timeoutMs: number };
    /** `security.guestToolSet`: the most a guest's turn may use. */
    guestToolSet: string[];
    /** `llm.textToolCalls`. */
    textToolCalls?: boolean;
    /** `llm.vision`. */
    vision?: "auto" | boolean;
  };
}

export interface TurnResult extends TurnOutcome {
  /** The tools the turn was offered (and allowed to dispatch). */
  toolNames: string[];
  /** The turn was stopped while it waited for a person (an approval or a question). */
  stoppedWhileWaiting?: boolean;
}

/**
 * The one turn engine (DESIGN.md → Agent core): resolves the turn's tools from its request (agent set, override,
 * creator's limit, guest limit), recalls memory for the sender's role, builds the system prompt, holds a
 * `maxConcurrentTurns` slot (given back while the turn waits for a person) and runs the agent loop.
 */
export class TurnEngine {
  private readonly events: EventPublisher;

  constructor(private readonly options: TurnEngineOptions) {
    this.events = options.events ?? NO_EVENTS;
  }

  get hasModel(): boolean {
    return this.options.model !== null;
  }

  /** Tool names a request may use: every narrowing applies, none widens. */
  toolsFor(request: Pick<TurnRequest, "agent" | "toolSet" | "toolLimit" | "sender">): string[] {
    const { tools, settings } = this.options;
    let names = tools.resolveToolSet(request.agent.toolSet);
    if (request.toolSet !== undefined) {
      // An override narrows the agent's set, `subagent` included: it never adds a tool the agent lacks.
      const narrowed = new Set(tools.resolveToolSet(request.toolSet));
      names = names.filter((name) => narrowed.has(name));
    }
    if (request.toolLimit) {
      const limit = new Set(request.toolLimit);
      names = names.filter((name) => limit.has(name));
    }
    if (request.sender.role === "guest") {
      const limit = new Set(tools.resolveToolSet(settings.guestToolSet));
      names = names.filter((name) => limit.has(name));
    }
    return names;
  }

  /** Runs one turn; the caller persists its new messages (in its own transaction). Never throws. */
  async run(request: TurnRequest): Promise<TurnResult> {
    if (!this.options.model) {
      return {
        status: "error",
        reply: NO_LLM_REPLY,
        newMessages: [],
        iterations: 0,
        toolCalls: 0,
        toolNames: [],
      };
    }
    const slot = request.slot ?? (await this.options.slots.acquire());
    // The turn's id is its budget turn's: a chat turn's is `inbox:<first message>`, and what it delegates or
    // spawns carries the same id, so `magpie trace` finds everything a message caused.
    const budget = request.budget ?? { sessionKey: request.sessionKey, turnId: randomUUID() };
    const turn = {
      turnId: budget.turnId,
      origin: request.origin,
      sessionKey: request.sessionKey,
      agent: request.agent.name,
      inboxIds: request.inboxIds ?? [],
    };
    const started = this.options.clock.now();
    let result: TurnResult | undefined;
    try {
      request.onStart?.();
      this.events.turnStarted({ ...turn, at: started });
      result = await this.execute({ ...request, budget }, slot);
      return result;
    } finally {
      if (!request.slot) slot.release();
      this.events.turnFinished({
        ...turn,
        status: result?.status ?? "crashed",
        ...(result?.errorCode ? { errorCode: result.errorCode } : {}),
        durationMs: this.options.clock.now() - started,
        iterations: result?.iterations ?? 0,
        toolCalls: result?.toolCalls ?? 0,
      });
    }
  }

  /** Runs a turn whose history is its own (jobs, delegation, subagents) and keeps that history. */
  async runDetached(request: TurnRequest): Promise<TurnResult> {
    const { store, clock } = this.options;
    const historyKey = request.historyKey ?? request.sessionKey;
    store.history.ensureSession(historyKey, request.agent.name, clock.now());
    const result = await this.run(request);
    if (result.newMessages.length > 0)
      store.history.append(historyKey, withTokens(result.newMessages), clock.now());
    return result;
  }

  /** Compacts a session's history past the budget (after a chat turn), spending from that turn's budgets. */
  async compact(
    historyKey: string,
    agent: AgentProfile,
    role: Role,
    turn?: { budget: BudgetScope; origin: TurnOrigin },
  ): Promise<void> {
    if (!this.options.model) return;
    const port = this.options.spend?.() ?? null;
    const result = await compactHistory({
      spend:
        port && turn
          ? { port, scope: { origin: turn.origin, ...turn.budget, historyKey, agent: agent.name } }
          : null,
      history: this.options.store.history,
      sessionKey: historyKey,
      model: this.options.model,
      modelName: agent.model,
      budget: this.options.settings.historyTokens,
      logger: this.options.logger,
    });
    if (!result) return;
    this.options.logger.info({ session: historyKey, removed: result.removed }, "history-compacted");
    for (const hooks of this.options.hooks()) {
      try {
        await hooks.onCompacted?.({
          sessionKey: historyKey,
          agent: agent.name,
          summary: result.summary,
          role,
        });
      } catch (error) {
        this.options.logger.warn({ err: error }, "compaction-hook-failed");
      }
    }
  }

  private async execute(request: TurnRequest, slot: import("./turn-slots.js").TurnSlot): Promise<TurnResult> {
    const { store, settings, tools, logger } = this.options;
    const historyKey = request.historyKey ?? request.sessionKey;
    const toolNames = this.toolsFor(request);
    const historyBudget = Math.floor(settings.historyTokens * 1.5);
    const stored = store.history.newest(historyKey, historyBudget).messages;
    const history = recentWithinBudget(stored, historyBudget).map((item) => item.message);
    const recalled: string[] = [];
    const turnApprovals = request.turnApprovals ?? new TurnApprovals();
    turnApprovals.provenance.seed(request.untrusted);
    for (const hooks of this.options.hooks()) {
      if (!hooks.recall) continue;
      try {
        const text = await hooks.recall({
          sessionKey: request.sessionKey,
          agent: request.agent.name,
          text: request.text,
          role: request.sender.role,
        });
        if (typeof text === "string") recalled.push(text);
        else if (text) {
          // A memory stored by a tainted turn keeps that turn's provenance: recalling it taints this one.
          recalled.push(text.text);
          for (const source of text.untrusted) turnApprovals.provenance.add(source);
        }
      } catch (error) {
        logger.warn({ err: error }, "recall-hook-failed");
      }
    }
    const systemPrompt = buildSystemPrompt({
      agent: request.agent,
      globalPrompt: settings.globalPrompt,
      timezone: settings.timezone,
      now: new Date(this.options.clock.now()),
      channel: request.channel,
      isDirect: request.isDirect,
      summary: store.history.summary(historyKey),
      recalled,
      toolNames,
    });
    let waitingNow = false;
    let stoppedWhileWaiting = false;
    const whileWaiting = async <T>(wait: () => Promise<T>): Promise<T> => {
      waitingNow = true;
      const onAbort = () => {
        if (waitingNow) stoppedWhileWaiting = true;
      };
      request.signal.addEventListener("abort", onAbort, { once: true });
      try {
        return await slot.whileWaiting(wait);
      } finally {
        waitingNow = false;
        request.signal.removeEventListener("abort", onAbort);
      }
    };
    const budget = request.budget ?? { sessionKey: request.sessionKey, turnId: randomUUID() };
    const outcome = await runAgentTurn(
      {
        model: this.options.model!,
        tools,
        logger,
        maxIterations: request.maxIterations ?? settings.maxIterations,
        llm: settings.llm,
        spend: this.options.spend?.() ?? null,
        textToolCalls: settings.textToolCalls ?? false,
        vision: settings.vision ?? "auto",
      },
      {
        agent: request.agent,
        ...(request.model ? { model: request.model } : {}),
        spendScope: {
          origin: request.origin,
          sessionKey: budget.sessionKey,
          historyKey,
          turnId: budget.turnId,
          agent: request.agent.name,
        },
        systemPrompt,
        history,
        userText: request.text,
        ...(request.images?.length ? { images: request.images } : {}),
        toolNames,
        context: {
          sessionKey: request.sessionKey,
          agent: request.agent.name,
          target: request.target,
          userId: request.sender.userId,
          sender: request.sender,
          origin: request.origin,
          canAsk: request.canAsk,
          ...(request.approver ? { approver: request.approver } : {}),
          signal: request.signal,
          depth: request.depth,
          whileWaiting,
          ...(request.toolLimit ? { toolLimit: request.toolLimit } : {}),
          isDirect: request.isDirect,
          slot,
          budget,
          turnApprovals,
        },
        onTextDelta: request.onTextDelta,
        ...(request.onActivity ? { onActivity: request.onActivity } : {}),
        ...(request.journal ? { journal: request.journal } : {}),
      },
    );
    return { ...outcome, toolNames, ...(stoppedWhileWaiting ? { stoppedWhileWaiting } : {}) };
  }
}

/** Messages with their estimated token counts, as history stores them. */
export function withTokens(messages: ChatMessage[]) {
  return messages.map((message) => ({ message, tokens: estimateMessageTokens(message) }));
}
