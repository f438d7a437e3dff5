import { randomUUID } from "node:crypto";
import type { AgentDirectory } from "./agents.js";
import type { ToolCallContext } from "./tool-runtime.js";
import type { TurnEngine } from "./turn-engine.js";

/** What a tool call's outcome looks like to the tool layer: an answer, or a refusal the model can act on. */
export type DelegationResult<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

export interface DelegateInput {
  agent: string;
  prompt: string;
  context?: string;
}

/** The `delegate` tool's port into the core (`services.delegation`). */
export interface DelegationPort {
  delegate(input: DelegateInput, caller: ToolCallContext): Promise<DelegationResult<string>>;
}

export interface DelegationOptions {
  engine: TurnEngine;
  agents: AgentDirectory;
  /** `agent.maxDelegationDepth`: nested delegations that may run. */
  maxDepth: number;
}

/**
 * Delegation (DESIGN.md → Agent core): a turn of a named agent, with that agent's own tool set, run inside
 * the caller's turn — same authority (sender, approver), same `maxConcurrentTurns` slot, tool calls audited
 * under the caller's session — with a history of its own.
 */
export class Delegation implements DelegationPort {
  constructor(private readonly options: DelegationOptions) {}

  async delegate(input: DelegateInput, caller: ToolCallContext): Promise<DelegationResult<string>> {
    const { engine, agents, maxDepth } = this.options;
    if (caller.origin === "spawn") {
      return refusal(
        "delegate.not_for_subagents",
        "A background subagent cannot delegate; do the work itself.",
      );
    }
    const depth = caller.depth + 1;
    if (depth > maxDepth) {
      return refusal(
        "delegate.depth_exceeded",
        `Delegation depth limit reached: this turn is already ${caller.depth} delegation(s) deep and agent.maxDelegationDepth is ${maxDepth}. Do the work yourself or return what you have to the agent that asked.`,
      );
    }
    const agent = agents.get(input.agent);
    if (!agent) {
      return refusal(
        "delegate.unknown_agent",
        `There is no agent named "${input.agent}". Agents: ${agents.names().join(", ")}.`,
      );
    }
    const text = input.context ? `${input.prompt}\n\nContext:\n${input.context}` : input.prompt;
    const outcome = await engine.runDetached({
      origin: "delegate",
      // Audited under the caller's session; the delegated agent remembers its own conversation apart.
      sessionKey: caller.sessionKey,
      historyKey: `delegate:${caller.sessionKey}:${randomUUID()}`,
      agent,
      sender: caller.sender,
      target: caller.target,
      text,
      channel: caller.target.channel,
      isDirect: caller.isDirect ?? true,
      depth,
      // A job creator's limit holds through delegation too.
      ...(caller.toolLimit ? { toolLimit: caller.toolLimit } : {}),
      canAsk: caller.canAsk,
      ...(caller.approver ? { approver: caller.approver } : {}),
      signal: caller.signal,
      // The caller's slot: a second one could deadlock when every slot is held by a delegating turn.
      ...(caller.slot ? { slot: caller.slot } : {}),
      // The caller's budgets: a delegation spends from the message's perTurn, not a fresh one.
      ...(caller.budget ? { budget: caller.budget } : {}),
    });
    switch (outcome.status) {
      case "ok":
        return { ok: true, value: outcome.reply };
      case "aborted":
        return refusal("delegate.aborted", `The delegated turn of "${agent.name}" was stopped.`);
      case "budget":
        // Refused, not failed: the budget the delegated turn spent from is this turn's too.
        return refusal("budget.exceeded", `Agent "${agent.name}" stopped at a budget: ${outcome.reply}`);
      case "max_iterations":
        return refusal(
          "delegate.max_iterations",
          `Agent "${agent.name}" did not finish within agent.maxIterations: ${outcome.reply}`,
        );
      default:
        return refusal("delegate.failed", `Agent "${agent.name}" failed: ${outcome.reply}`);
    }
  }
}

function refusal(code: string, message: string): { ok: false; code: string; message: string } {
  return { ok: false, code, message };
}
