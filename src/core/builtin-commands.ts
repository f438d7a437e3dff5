import type { Store } from "../store/index.js";
import type { AgentDirectory } from "./agents.js";
import type { CommandRegistry, SlashCommand } from "./commands.js";
import type { TaskControl } from "./subagents.js";
import { forgetHistoryTaint } from "./turn-provenance.js";
import type { ChannelAdapter } from "./types.js";

export interface BuiltinCommandDeps {
  commands: CommandRegistry;
  store: Store;
  agents: AgentDirectory;
  adapters: () => ReadonlyMap<string, ChannelAdapter>;
  modelName: string | null;
  uptimeMs: () => number;
  queueStats: () => { running: number; paused: number; waiting: number };
  /** `parked`: the turn stopped was waiting out an LLM outage (its message is dropped, not answered later). */
  stop: (sessionKey: string) => { aborted: boolean; dropped: number; parked?: boolean };
  /** Whether shell, git and command jobs run in the sandbox (known once start-up has probed it). */
  sandbox?: () => { active: boolean; reason: string } | null;
  /** Extra clean-up when a session is reset (tool scratch state). */
  onReset?: (sessionKey: string) => void;
  /** Background subagents, for /tasks and /stop. */
  tasks?: TaskControl;
  clock?: { now(): number };
}

/** What /stop and /reset say when they drop a turn that was waiting out an LLM outage. */
const PARKED_DROPPED = "dropped your message that was waiting for the model; it won't be answered";

function sandboxLine(status: { active: boolean; reason: string } | null): string {
  if (!status) return "Sandbox: not probed yet.";
  return status.active
    ? "Sandbox: on (bubblewrap)."
    : `Sandbox: OFF, shell and git run unsandboxed (${status.reason}).`;
}

/**
 * `/name args` for /help: usages are written with or without the leading slash, and a multi-line usage
 * (`/cron`'s) is the command's own help, so /help shows just its name.
 */
function helpHead(command: SlashCommand): string {
  const usage = command.usage?.trim();
  if (!usage || usage.includes("\n")) return `/${command.name}`;
  return `/${usage.replace(/^\/+/, "")}`;
}

/** /help /start /status /reset /stop /tasks — deterministic, no LLM needed. */
export function builtinCommands(deps: BuiltinCommandDeps): SlashCommand[] {
  const help: SlashCommand = {
    name: "help",
    description: "List the commands",
    run: () => {
      const lines = deps.commands
        .list()
        .filter((command) => command.name !== "start")
        .map((command) => `${helpHead(command)} — ${command.description}`);
      return { text: `Commands:\n${lines.join("\n")}`, format: "plain" };
    },
  };
  return [
    help,
    {
      name: "start",
      description: "Greeting (Telegram sends it on first contact)",
      run: async (context) => {
        const list = await help.run(context);
        return {
          text: `Hi, I'm Magpie. Write to me in plain words, or use a command.\n\n${typeof list === "string" ? list : list.text}`,
          format: "plain",
        };
      },
    },
    {
      name: "status",
      description: "Model, channels, queue and this chat's history",
      run: ({ sessionKey, message }) => {
        const channels = [...deps.adapters().values()]
          .map((adapter) => `${adapter.name}: ${adapter.status().state}`)
          .join(", ");
        const queue = deps.queueStats();
        const history = deps.store.history.stats(sessionKey);
        const agent = deps.agents.forMessage(message);
        const lines = [
          `Magpie is up ${formatDuration(deps.uptimeMs())}.`,
          `Model: ${deps.modelName ?? "none configured (slash commands only)"}; agent: ${agent.name}.`,
          `Channels: ${channels || "none"}.`,
          sandboxLine(deps.sandbox?.() ?? null),
          `Turns: ${queue.running} running, ${queue.paused} waiting for an answer, ${queue.waiting} messages queued. Outbox: ${deps.store.outbox.pendingCount()} pending.`,
          `This chat: ${history.messages} messages in history (~${history.tokens} tokens)${history.hasSummary ? " plus a summary of older turns" : ""}.`,
        ];
        return { text: lines.join("\n"), format: "plain" };
      },
    },
    {
      name: "reset",
      description: "Forget this chat's conversation history",
      run: ({ sessionKey }) => {
        const { parked } = deps.stop(sessionKey);
        deps.store.history.reset(sessionKey);
        forgetHistoryTaint(deps.store.kv, sessionKey);
        deps.onReset?.(sessionKey);
        return parked
          ? `Conversation history cleared, and ${PARKED_DROPPED}. Long-term memory is kept.`
          : "Conversation history cleared. Long-term memory is kept.";
      },
    },
    {
      name: "stop",
      usage: "stop [task_id]",
      description: "Stop the running request and background tasks in this chat (or one task)",
      run: ({ sessionKey, args }) => {
        if (args) {
          if (deps.tasks?.cancel(sessionKey, args)) return `Cancelled task ${args}.`;
          return `No running task "${args}" in this chat. /tasks lists them.`;
        }
        const { aborted, dropped, parked } = deps.stop(sessionKey);
        const cancelled = deps.tasks?.cancelSession(sessionKey) ?? [];
        if (!aborted && dropped === 0 && cancelled.length === 0) return "Nothing is running.";
        const parts = [
          parked ? PARKED_DROPPED : "",
          dropped > 0 ? `dropped ${plural(dropped, "queued message")}` : "",
          cancelled.length > 0
            ? `cancelled ${plural(cancelled.length, "background task")}: ${cancelled.map((task) => task.id).join(", ")}`
            : "",
        ].filter(Boolean);
        return parts.length > 0 ? `Stopped (and ${parts.join("; ")}).` : "Stopped.";
      },
    },
    {
      name: "tasks",
      description: "Background tasks of this chat: running and recent",
      run: ({ sessionKey }) => {
        const tasks = deps.tasks?.list(sessionKey) ?? [];
        if (tasks.length === 0) return "No background tasks in this chat.";
        const now = deps.clock?.now() ?? Date.now();
        const lines = tasks.map((task) => {
          const name = task.label ? `${task.id} (${task.label})` : task.id;
          if (task.status === "running")
            return `▶ ${name} — running for ${formatDuration(now - task.startedAt)}`;
          const took =
            task.finishedAt !== undefined ? ` after ${formatDuration(task.finishedAt - task.startedAt)}` : "";
          const excerpt = task.resultExcerpt ? `: ${oneLine(task.resultExcerpt, 120)}` : "";
          return `· ${name} — ${task.status}${took}${excerpt}`;
        });
        return {
          text: `Background tasks:\n${lines.join("\n")}\n/stop <task_id> cancels a running one.`,
          format: "plain",
        };
      },
    },
  ];
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function formatDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${seconds % 60}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h ${minutes % 60}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}
