import { randomUUID } from "node:crypto";
import type { AgentDirectory, AgentProfile } from "./agents.js";
import type { ToolCaller } from "./tool-runtime.js";
import type { TurnEngine } from "./turn-engine.js";

/**
 * What a tool call's outcome looks like to the tool layer: an answer, or a failure the model can act on — `refused`
 * when a rule refused it (audited as a denial).
 */
export type DelegationResult<T> =
  | { ok: true; value: T }
  | { ok: false; code: string; message: string; refused?: true };

export interface DelegateInput {
  agent: string;
  prompt: string;
  context?: string;
}

/** The `delegate` tool's port into the core (`services.delegation`). */
export interface DelegationPort {
  delegate(input: DelegateInput, caller: ToolCaller): Promise<DelegationResult<string>>;
  /** The tools a delegated turn of `agent` would hold under this caller's bounds; null when there is no such agent. */
  toolsOf(agent: string, caller: ToolCaller): string[] | null;
}

export interface DelegationOptions {
  engine: TurnEngine;
  agents: AgentDirectory;
  /** `agent.maxDelegationDepth`: nested delegations that may run. */
  maxDepth: number;
}

/**
 * Delegation (DESIGN.md → Agent core): a turn of a named agent, with that agent's own tool set, run inside
 * the caller's turn — same authority (sender, approver, a job creator's bound), same `maxConcurrentTurns` slot,
 * tool calls audited under the caller's session — with a history of its own. Only to an agent whose tools lie
 * within the caller's, or that the caller's agent lists in `delegates`.
 */
export class Delegation implements DelegationPort {
  constructor(private readonly options: DelegationOptions) {}

  async delegate(input: DelegateInput, caller: ToolCaller): Promise<DelegationResult<string>> {
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
    const widening = this.widening(agent, caller);
    if (widening) return widening;
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
      // Part of the caller's turn: its approvals are counted with the caller's.
      ...(caller.turnApprovals ? { turnApprovals: caller.turnApprovals } : {}),
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

  toolsOf(name: string, caller: ToolCaller): string[] | null {
    const agent = this.options.agents.get(name);
    return agent ? this.delegatedTools(agent, caller) : null;
  }

  /** The agent's set under the caller's own bounds (a job creator's set, the guest set), which it inherits. */
  private delegatedTools(agent: AgentProfile, caller: ToolCaller): string[] {
    return this.options.engine.toolsFor({
      agent,
      ...(caller.toolLimit ? { toolLimit: caller.toolLimit } : {}),
      sender: caller.sender,
    });
  }

  /**
   * Giving an agent `delegate` must not widen its tools by surprise (DESIGN.md → Delegation): the tools the
   * delegated turn would get — the agent's set under the caller's own bounds (a job creator's set, the guest set),
   * which it inherits whatever happens — must lie within the calling turn's tools, unless the caller's agent lists
   * the agent in `delegates`. Null when the delegation may run.
   */
  private widening(agent: AgentProfile, caller: ToolCaller): DelegationResult<string> | null {
    const { agents } = this.options;
    const own = new Set(caller.allowedTools);
    const beyond = this.delegatedTools(agent, caller).filter((name) => !own.has(name));
    if (beyond.length === 0) return null;
    if (agents.get(caller.agent)?.delegates?.includes(agent.name)) return null;
    return {
      ok: false,
      refused: true,
      code: "delegate.wider_tool_set",
      message: `Agent "${agent.name}" has tools this turn does not (${beyond.join(", ")}), and agents.${caller.agent}.delegates does not list it, so it was not asked; nothing was done. Do the work with your own tools, delegate to an agent whose tools lie within yours, or tell the owner (who can add "${agent.name}" to agents.${caller.agent}.delegates).`,
    };
  }
}

function refusal(code: string, message: string): { ok: false; code: string; message: string } {
  return { ok: false, code, message };
}
