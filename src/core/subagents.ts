import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { errorMessage } from "../lib/errors.js";
import type { TaskRecord, TaskRepository, TaskStatus } from "../store/tasks.js";
import type { AgentDirectory, AgentProfile } from "./agents.js";
import type { SessionNote } from "./chat-turns.js";
import type { Clock } from "./clock.js";
import type { DelegationResult } from "./delegation.js";
import { sessionKeyOf } from "./session-key.js";
import type { ToolCallContext, ToolCaller } from "./tool-runtime.js";
import type { TurnEngine, TurnResult } from "./turn-engine.js";
import type { ReplyTarget } from "./types.js";

export interface SpawnInput {
  task: string;
  label?: string;
}

/** The `spawn` tool's port into the core (`services.subagents`). */
export interface SubagentsPort {
  spawn(input: SpawnInput, caller: ToolCaller): DelegationResult<{ taskId: string; tools: string[] }>;
  /** The tools a subagent this caller spawns would hold (what the rule of two's prompt shows). */
  toolsOf(caller: ToolCaller): string[];
}

/** What `/tasks` and `/stop` need. */
export interface TaskControl {
  /** A chat's running tasks and its recent finished ones, newest first. */
  list(sessionKey: string): TaskRecord[];
  /** Cancels one running task of the chat; false when it has no such running task. */
  cancel(sessionKey: string, taskId: string): boolean;
  /** Cancels every running task of the chat; returns them. */
  cancelSession(sessionKey: string): TaskRecord[];
}

export interface SubagentsOptions {
  engine: TurnEngine;
  agents: AgentDirectory;
  tasks: TaskRepository;
  clock: Clock;
  logger: Logger;
  /** Puts a finished task's result into its chat session (a follow-up turn there). */
  note(note: SessionNote): void;
  /** Shows a line in a chat without starting a turn. */
  notice(target: ReplyTarget, text: string): void;
  settings: {
    /** `agent.maxSubagents`: running at once; more are refused. */
    maxSubagents: number;
    timeoutSecs: number;
    maxIterations: number;
  };
}

interface RunningTask {
  record: TaskRecord;
  controller: AbortController;
  done: Promise<void>;
}

type AbortReason = "cancel" | "timeout" | "shutdown";

const SHOWN_RESULT_CHARS = 300;
const SHUTDOWN_WAIT_MS = 3_000;

/**
 * Background subagents (DESIGN.md → Agent core → `spawn`): each runs one turn through the engine with the fixed
 * `subagent` tool set intersected with its caller's tools, its own `maxConcurrentTurns` slot, no one to ask and a time limit; its result is put back
 * into the chat it came from. Every task is a row in `tasks`, so `/tasks` lists it and a restart leaves an
 * "interrupted" record.
 */
export class Subagents implements SubagentsPort, TaskControl {
  private readonly running = new Map<string, RunningTask>();

  constructor(private readonly options: SubagentsOptions) {}

  toolsOf(caller: ToolCaller): string[] {
    // The `subagent` set intersected with what the calling turn may use — which already holds every bound on the
    // caller (its agent's set, a job creator's set, the guest set) — so a subagent never has a tool its caller lacks.
    return this.options.engine.toolsFor({
      agent: this.agentOf(caller),
      toolSet: "subagent",
      toolLimit: [...caller.allowedTools],
      sender: caller.sender,
    });
  }

  private agentOf(caller: ToolCaller): AgentProfile {
    const { agents } = this.options;
    return agents.get(caller.agent) ?? agents.get(agents.defaultAgent)!;
  }

  get runningCount(): number {
    return this.running.size;
  }

  spawn(input: SpawnInput, caller: ToolCaller): DelegationResult<{ taskId: string; tools: string[] }> {
    const { tasks, clock, settings } = this.options;
    if (caller.origin === "spawn") {
      return refusal("spawn.not_for_subagents", "A background subagent cannot start another one.");
    }
    if (settings.maxSubagents === 0) {
      return refusal("spawn.disabled", "Background subagents are turned off (agent.maxSubagents: 0).");
    }
    if (this.running.size >= settings.maxSubagents) {
      const ids = [...this.running.keys()].join(", ");
      return refusal(
        "spawn.limit_reached",
        `${this.running.size} background subagents are already running (${ids}; agent.maxSubagents is ${settings.maxSubagents}). Nothing was started: wait for one to finish, do the work yourself, or ask the user to /stop one.`,
      );
    }
    const agent = this.agentOf(caller);
    const tools = this.toolsOf(caller);
    const target: ReplyTarget = {
      channel: caller.target.channel,
      chatId: caller.target.chatId,
      ...(caller.target.threadId ? { threadId: caller.target.threadId } : {}),
    };
    const record: TaskRecord = {
      id: randomUUID().replaceAll("-", "").slice(0, 8),
      sessionKey: sessionKeyOf(target),
      target,
      agent: agent.name,
      createdBy: `${caller.sender.channel}:${caller.sender.userId}`,
      ...(input.label ? { label: input.label } : {}),
      task: input.task,
      status: "running",
      startedAt: clock.now(),
    };
    tasks.insert(record);
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort("timeout" satisfies AbortReason),
      settings.timeoutSecs * 1000,
    );
    const outcome = this.options.engine
      .runDetached({
        origin: "spawn",
        // Audited under the chat it came from; its conversation is kept apart.
        sessionKey: caller.sessionKey,
        historyKey: `spawn:${record.id}`,
        agent,
        toolSet: "subagent",
        toolLimit: [...caller.allowedTools],
        sender: caller.sender,
        target,
        text: input.task,
        channel: target.channel,
        isDirect: true,
        depth: caller.depth + 1,
        // Nobody watches a background task: what needs asking is refused.
        canAsk: false,
        maxIterations: settings.maxIterations,
        // Counts against the chat (or job run) and the turn that spawned it.
        ...(caller.budget ? { budget: caller.budget } : {}),
        // Its approvals count with the turn that spawned it (a split mass deletion stays one).
        ...(caller.turnApprovals ? { turnApprovals: caller.turnApprovals } : {}),
        signal: controller.signal,
        // No slot: the caller's turn ends now; the subagent waits for its own.
      })
      .catch((error: unknown): TurnResult => {
        this.options.logger.error({ err: error, task: record.id }, "subagent-crashed");
        return {
          status: "error",
          reply: `The subagent crashed: ${errorMessage(error)}`,
          newMessages: [],
          iterations: 0,
          toolCalls: 0,
          toolNames: [],
        };
      });
    const done = outcome.then((result) => {
      clearTimeout(timer);
      this.running.delete(record.id);
      this.finish(record, caller, result, controller.signal);
    });
    this.running.set(record.id, { record, controller, done });
    this.options.logger.info({ task: record.id, session: record.sessionKey }, "subagent-started");
    return { ok: true, value: { taskId: record.id, tools } };
  }

  list(sessionKey: string): TaskRecord[] {
    return this.options.tasks.listForSession(sessionKey);
  }

  cancel(sessionKey: string, taskId: string): boolean {
    const running = this.running.get(taskId);
    if (!running || running.record.sessionKey !== sessionKey) return false;
    running.controller.abort("cancel" satisfies AbortReason);
    return true;
  }

  cancelSession(sessionKey: string): TaskRecord[] {
    const cancelled: TaskRecord[] = [];
    for (const running of this.running.values()) {
      if (running.record.sessionKey !== sessionKey) continue;
      running.controller.abort("cancel" satisfies AbortReason);
      cancelled.push(running.record);
    }
    return cancelled;
  }

  /** At start-up: tasks a previous run left "running" become "interrupted", with one notice per chat. */
  recover(): number {
    const interrupted = this.options.tasks.interruptRunning(this.options.clock.now());
    const byChat = new Map<string, TaskRecord[]>();
    for (const task of interrupted)
      byChat.set(task.sessionKey, [...(byChat.get(task.sessionKey) ?? []), task]);
    for (const chatTasks of byChat.values()) {
      const names = chatTasks.map(describeTask).join(", ");
      this.options.notice(
        chatTasks[0]!.target,
        `Magpie restarted while ${chatTasks.length === 1 ? "a background task was" : "background tasks were"} running: ${names} — interrupted. Start again if still needed.`,
      );
    }
    if (interrupted.length > 0)
      this.options.logger.info({ tasks: interrupted.length }, "subagents-interrupted");
    return interrupted.length;
  }

  /** Stops every running task (app shutdown); they are recorded as "interrupted". */
  async shutdown(): Promise<void> {
    const running = [...this.running.values()];
    for (const task of running) task.controller.abort("shutdown" satisfies AbortReason);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(running.map((task) => task.done)),
      new Promise((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  private finish(
    record: TaskRecord,
    caller: Pick<ToolCallContext, "sender" | "budget" | "turnApprovals">,
    result: TurnResult,
    signal: AbortSignal,
  ): void {
    const { tasks, clock, settings, logger } = this.options;
    const status: Exclude<TaskStatus, "running"> =
      result.status === "ok" ? "done" : signal.aborted ? statusOfAbort(signal.reason) : "failed";
    logger.info({ task: record.id, status, iterations: result.iterations }, "subagent-finished");
    // Stopped by a shutdown: the row stays "running", so the next start records it "interrupted" and says so.
    if (status === "interrupted") return;
    const summary =
      status === "timeout"
        ? `Stopped after ${settings.timeoutSecs} s (agent.subagentTimeoutSecs) without a final answer.`
        : status === "cancelled"
          ? "Cancelled with /stop."
          : result.reply;
    try {
      tasks.finish(record.id, status, summary, clock.now());
      // A cancelled task was stopped by the person it would report to: no follow-up turn.
      if (status === "cancelled") return;
      const name = describeTask(record);
      const headline =
        status === "done"
          ? `Background task ${name} finished`
          : status === "timeout"
            ? `Background task ${name} timed out`
            : `Background task ${name} failed`;
      this.options.note({
        target: record.target,
        // The follow-up turn carries the authority of whoever started the task, and spends from its budgets.
        sender: caller.sender,
        ...(caller.budget ? { budget: caller.budget } : {}),
        origin: "spawn",
        // The task shared the spawning turn's provenance: its result is untrusted if anything the two read was.
        untrusted: caller.turnApprovals?.provenance.tainted ?? true,
        ...(record.label ? { label: record.label } : {}),
        show: `${headline}: ${truncate(summary, SHOWN_RESULT_CHARS)}`,
        text: `${headline} (status: ${status}).\nTask: ${record.task}\n\nResult:\n${summary}`,
      });
    } catch (error) {
      logger.error({ err: error, task: record.id }, "subagent-report-failed");
    }
  }
}

function statusOfAbort(reason: unknown): Exclude<TaskStatus, "running"> {
  if (reason === "timeout") return "timeout";
  if (reason === "shutdown") return "interrupted";
  return "cancelled";
}

function describeTask(task: Pick<TaskRecord, "id" | "label">): string {
  return task.label ? `${task.id} (${task.label})` : task.id;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function refusal(code: string, message: string): { ok: false; code: string; message: string } {
  return { ok: false, code, message };
}
